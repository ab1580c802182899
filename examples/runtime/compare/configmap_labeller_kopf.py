import kopf

TEAM = "example.kro.run/team"


def not_skipped(labels, **_):
    return "example.kro.run/skip" not in labels


@kopf.on.resume("configmaps", when=not_skipped)
@kopf.on.create("configmaps", when=not_skipped)
@kopf.on.field("configmaps", field="metadata.annotations", when=not_skipped)
@kopf.on.field("configmaps", field="metadata.labels", when=not_skipped)
def label(meta, patch, **_):
    team = meta.get("annotations", {}).get(TEAM)
    if meta.get("labels", {}).get(TEAM) != team:
        patch.metadata.labels[TEAM] = team
