"""llama.cpp builds for the nightly: git helpers the service shares (gitrepo),
the build itself (build) and the rig's nightly task (nightly)."""
