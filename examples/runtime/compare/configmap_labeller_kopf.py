import kopf

TEAM = "example.kro.run/team"
NOT_SKIPPED = {"example.kro.run/skip": kopf.ABSENT}


@kopf.on.resume("configmaps", labels=NOT_SKIPPED)
@kopf.on.create("configmaps", labels=NOT_SKIPPED)
@kopf.on.update("configmaps", field="metadata", labels=NOT_SKIPPED)
def label(meta, patch, **_):
    team = meta.get("annotations", {}).get(TEAM)
    if meta.get("labels", {}).get(TEAM) != team:
        patch.metadata.labels[TEAM] = team
