"""People and groups: the admins' People pages (users, invitations, one-time set-password
links, groups and their members), the "Everyone" group every user is in, and a user's
groups as grants see them (``services.user_groups``)."""
