"""`reclaimlab report`: run and sweep directories as one self-contained HTML page of
tables and plots (python/reclaimlab/report/cli.py; the page in page.py, its plots in
figures.py). plotly is imported only when a report is written."""
