"""Imported by the fork server alone (`processes.process_context` preloads it): what must hold
in that process and in every worker forked from it, set as it starts."""

from .processes import quiet_abandoned_starts

quiet_abandoned_starts()
