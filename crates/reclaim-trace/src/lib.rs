//! Streaming ftrace parser and vmscan analysis (see docs/tracing.md).
pub mod analysis;
pub mod event;
pub mod fields;
pub mod line;
pub mod reader;
