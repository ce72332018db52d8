//! Streaming ftrace parser and vmscan analysis of real and simulated traces: `reader` (plain,
//! gzip or zstd input), `line` (one ftrace text line), `fields` (key=value scanning), `event`
//! (the vmscan events in their 2.6.36-era and 6.x layouts), `analysis` (the statistics of
//! trace-vmscan-postprocess.pl and mmtests' vmscan report). Work in progress: the report
//! text and the Python command are not wired up yet.
pub mod analysis;
pub mod event;
pub mod fields;
pub mod line;
pub mod reader;
