"""The seed documents' experiments: reference tables and side-by-side reports."""
