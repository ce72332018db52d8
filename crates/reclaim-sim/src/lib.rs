//! Placeholder so this branch's workspace builds; the simulator replaces it on merge.
