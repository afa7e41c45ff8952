"""The dashboard's layer between the pages and the core (its figures are `rdqn.figures`).

Pure (no Streamlit; unit-tested as plain functions):
    history         rows, curves and tables of stored and live runs
    params          the live page's URL: a preset and config overrides, checked by their rules
    guided          guided lessons: steps read from assets/lessons/*.toml, checked field by field
    lessons         the lessons on offer, read again when a file changes
    share           class codes, follow links and their QR codes
    eta             time left for a run, the wait of a queued one

Streamlit glue (session state, widgets, the process-wide registry):
    state           the run store, the run registry, the session, every session-state default
    config_widgets  widgets generated from RunConfig fields (label, rule, doc as help)
    live, live_view the live page's run, its settings and what is shown of it
    comparisons     the Compare page's comparison on show; saved_runs, tree_state likewise
    assets          the pages' explanatory text from assets/text
    display         projector mode, and the one way a chart reaches a page (show_chart)
"""
