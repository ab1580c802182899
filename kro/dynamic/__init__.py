"""kro.dynamic: the generic dynamic micro-controller manager.

Registers and deregisters GVR watches and event handlers on one shared queue at runtime. kro's
child and external-reference routing is passed in as map functions; this package never reads a
kro label itself. Must not import: kro.api, kro.cel, kro.graph, kro.applyset, kro.controllers.
"""
