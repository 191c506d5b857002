"""JMX transforms: the Elastic Timer's XML and ``loadguard inject``."""

from loadguard.jmx.elastic_xml import (
    TEMPLATE_FILES,
    elastic_plan,
    elastic_timer_fragment,
    render_templates,
)
from loadguard.jmx.inject import (
    InjectResult,
    ThreadGroupInfo,
    has_elastic_timer,
    inject_elastic_timer,
    thread_groups,
)

__all__ = [
    "TEMPLATE_FILES",
    "InjectResult",
    "ThreadGroupInfo",
    "elastic_plan",
    "elastic_timer_fragment",
    "has_elastic_timer",
    "inject_elastic_timer",
    "render_templates",
    "thread_groups",
]
