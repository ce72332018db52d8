//! Streaming ftrace parser and vmscan analysis (see docs/tracing.md).
