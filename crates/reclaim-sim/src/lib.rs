//! Placeholder so the workspace builds on this branch; replaced on merge.
