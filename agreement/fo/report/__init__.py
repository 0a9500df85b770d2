"""The report of an agreement run (see :func:`agreement.fo.reports.export_agreement_report`): tidy tables
(:mod:`.tables`), per-label conflicts (:mod:`.conflicts`), the HTML page (:mod:`.html`) and one run's folder
(:mod:`.run_report`)."""
