"""Getting a rig started: ``rigboard-runner init`` (detect, write rig.toml) and ``doctor``
(check the rig and its config, say what to fix). Imports no Django."""
