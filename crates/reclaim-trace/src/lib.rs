//! Streaming ftrace parser, vmscan analysis and report for real and simulated traces:
//! `reader` (plain, gzip or zstd input), `line` (one ftrace text line), `fields` (key=value
//! scanning), `event` (the vmscan events in their 2.6.36-era and 6.x layouts), `analysis`
//! (the statistics of trace-vmscan-postprocess.pl and mmtests' vmscan report),
//! `concurrency` (how many tasks stall at once, the nodes each stall scans), `report`
//! (their text and JSON forms) and `writer` (events back to ftrace text, as the simulator
//! emits them).
pub mod analysis;
pub mod concurrency;
pub mod event;
pub mod fields;
pub mod line;
pub mod reader;
pub mod report;
pub mod writer;
