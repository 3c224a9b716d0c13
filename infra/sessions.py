"""The database session store, with its read compiled once per process (issue 38).

Every page request and every websocket frame (``infra.access.principal_current``) loads the
person's session: Django's store builds and compiles the same ``SELECT`` each time, about
half a millisecond of Python for a one-row read by primary key. Here that read is an
``infra.prepared`` statement; the expiry is compared in Python on the row it returns, which is
what the ORM's ``expire_date > now`` asks of the same row. Everything else (the cookie, the
signing, saving, cycling the key, clearing expired sessions) is Django's ``db`` store.
"""

from __future__ import annotations

from typing import Any

from django.contrib.sessions.backends import db
from django.contrib.sessions.models import Session
from django.utils import timezone

from infra.prepared import Prepared

_SESSION = Prepared(lambda key: Session.objects.filter(session_key=key), key=str)


class SessionStore(db.SessionStore):
    def _get_session_from_db(self) -> Any:
        session = _SESSION.one(key=self.session_key)
        if session is None or session.expire_date <= timezone.now():
            self._session_key = None
            return None
        return session
