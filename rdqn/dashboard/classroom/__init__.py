"""The classroom around the runs: browser sessions, the run each browser shows, class codes,
follow and fork. The serving layer (`rdqn.serve.registry`) knows owners only as opaque tokens."""
