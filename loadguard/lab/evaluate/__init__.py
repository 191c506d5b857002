"""The evaluation harness: the paper's experiment on our own target.

Six schemes -- the real jmeter-plugins baselines FFA and TSTCTG at an 800 req/s stress,
and LoadGuard with each policy -- run N times each against a fresh demo target, every
run the same length. Every scheme is judged by the same code from its own JTL
(``run_metrics``), and λ* is measured by a fixed-rate step sweep in the same session.

Modules: ``schemes`` (what runs), ``config`` (how long, which target), ``offered``
(the rate each scheme asked for), ``run_metrics`` (one run's figures, pure),
``lambda_star`` (λ* from sweep points, pure), ``runner`` (target, JMeter, sidecar:
the adapters), ``aggregate`` (mean ± sd), ``plots`` and ``markdown`` (the report),
``harness`` (the whole evaluation). Definitions: docs/evaluation.md.
"""
