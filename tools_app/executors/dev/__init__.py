"""Dev: the coding agent's toolset (tests, git, code search, and the file tools under the
names coding prompts expect — bound to the file activities via ``activity=``)."""
