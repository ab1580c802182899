"""--scenario fifty: fifty ConfigMaps per instance, the second reading the first (configmaps at
ten times the children)."""

from __future__ import annotations

from .configmaps import chain

SCENARIO = chain("fifty", 50, 2)
