"""Reports a person or a program reads: the Markdown (``markdown``) and HTML (``html``) renderings of one
run's report, the run's summary over its scenarios (``run_summary``), and the one path that writes a
run's report files (``writer``). The records themselves are ``dynsteer_hook.model.records``."""

from dynsteer_hook._moved import moved_names

__getattr__ = moved_names(__name__)  # the old module's names, for one release
