"""LoadGuard: an SLO-aware, closed-loop load controller for Apache JMeter."""

__version__ = "0.1.0"
