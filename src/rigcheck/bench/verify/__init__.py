"""`rigcheck verify` live: the steps and their budgets (``steps.py``) and the run that measures one node in its
time budget and hands the figures to checks/verify (``run.py``). Rules as bench/; the exit code of the burn it
runs comes from the CLI (run_verify's ``burn_exit_code``)."""
