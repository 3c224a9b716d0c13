"""Docs: list, search and read documentation folders (the project's own docs/ and folders an
admin adds). Runs in the worker; files are read below each folder without following links
(``platform_app.safe_files``), so no path the model writes can leave a folder."""
