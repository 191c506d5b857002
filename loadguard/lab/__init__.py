"""The lab: what proves LoadGuard, apart from the product a user runs beside JMeter.

The simulator (``simulate``), the plant suite and the evaluation harness (``evaluate``),
the embedded demo target (``target``), the real TeaStore (``teastore``), the demo
(``demo``) and their command-line adapters (``cli``). The lab may import the product;
nothing outside ``loadguard.lab`` imports the lab (tests/unit/test_import_direction.py).
"""
