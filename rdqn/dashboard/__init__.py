"""The dashboard's layer between the pages and the core (its figures are `rdqn.figures`).

The Streamlit app (``app.py``, ``pages/``, ``assets/``) is a checkout's top level; the wheel
carries a copy as ``rdqn/dashboard/app``, which ``rdqn dashboard`` serves (`assets.APP_ROOT`).

Pure (no Streamlit; unit-tested as plain functions):
    history         rows, curves and tables of stored and live runs
    params          the live page's URL: a preset and config overrides, checked by their rules
    guided          guided lessons: a preset, settings and steps (assets/lessons/*.toml)
    lesson_file     a lesson file read and checked field by field
    lessons         the lessons on offer, read again when a file changes
    share           class codes, follow links and their QR codes
    eta             time left for a run, the wait of a queued one
    shared_figures  figures built once per run snapshot, shared by the sessions that draw them
    watch           "Watch it play": a greedy episode's poses, animated in the browser
    internals_notes, live_tree_notes   the lines under the Replay internals and Sum tree charts
    return_threshold  when a run counts as solved (Compare, Sweeps)
    assets, text    the pages' text from assets/text, and users' text shown literally
    attempts, connections   brakes on guessing the admin token; a browser that went away

Streamlit glue (session state, widgets, the process-wide registry):
    state           the run store, the run registry, the session, every session-state default
    classroom       browser sessions, the run each browser shows, class codes, follow and fork
    config_widgets  widgets generated from RunConfig fields (label, rule, doc as help)
    live_settings   the live page's settings (a preset plus overrides), its lesson, its URL
    live_run        the live run's lifecycle: start, show, restart, resume, step, reload
    lesson_navigation  enter a lesson, Next / Back between its steps, leave it
    control_sync    the main controls and speed show the run; echoes undone; sliders settle
    settings_apply  the settings form's Apply, and a prices CSV uploaded with it
    live_controls, live_view   the live page's widgets, and what is shown of its run
    comparisons     the Compare page's comparison on show; saved_runs, run_card, tree_state,
                    tree_view, by_hand_table, experiments_view, sweeps_view, sweep_panel and
                    sweep_jobs likewise for their pages
    admin, ownership  who may control a run: the browser that started it, or the admin
    console         the teacher's console: who is here, every student run, the class's brakes
    display         projector mode, and the one way a chart reaches a page (show_chart)
    fragments       the redrawn parts of the pages; chart_code loads Plotly's code early
"""
