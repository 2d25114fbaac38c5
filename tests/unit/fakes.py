# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""Stand-ins for placement used by the unit tests.

Nothing here imports nova or placement. The real placement server is used
by the functional tests.
"""

import json
import urllib.parse

import requests

from nova_image_traits import placement

ROOT = 'ffffffff-0000-4000-8000-000000000001'
CHILD = '00000000-0000-4000-8000-000000000002'
SHARING = 'aaaaaaaa-0000-4000-8000-000000000003'
INSTANCE = '11111111-2222-4333-8444-555555555555'


def versions(max_version='1.39'):
    """The body of placement's ``GET /``."""
    return {'versions': [{'id': 'v1.0', 'min_version': '1.0',
                          'max_version': max_version, 'status': 'CURRENT'}]}


def response(status=200, body=None, raw=None, reason=None):
    """Build a real ``requests.Response`` with a JSON (or raw) body."""
    resp = requests.Response()
    resp.status_code = status
    resp.reason = reason
    if raw is None:
        raw = json.dumps(body).encode('utf-8')
        resp.headers['Content-Type'] = 'application/json'
    resp._content = raw
    return resp


class StubAdapter:
    """A keystoneauth adapter that answers from a script.

    :param routes: a dict mapping a path (without its query) to what the
        GET returns: a dict (sent as a 200 JSON body), a
        ``requests.Response``, an exception instance (raised), or a
        callable taking the list of query pairs and returning any of those
    :ivar calls: (url, kwargs) of every GET, in order
    """

    def __init__(self, routes=None, session_timeout=None):
        self.routes = dict(routes or {})
        self.calls = []
        if session_timeout is not None:
            self.session = type('Session', (), {})()
            self.session.timeout = session_timeout

    @property
    def paths(self):
        return [urllib.parse.urlsplit(url).path for url, _kw in self.calls]

    def get(self, url, **kwargs):
        self.calls.append((url, kwargs))
        split = urllib.parse.urlsplit(url)
        answer = self.routes[split.path]
        if callable(answer) and not isinstance(answer, Exception):
            answer = answer(urllib.parse.parse_qsl(
                split.query, keep_blank_values=True))
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, requests.Response):
            return answer
        return response(body=answer)


class StubClient(placement.PlacementClient):
    """A real client over a :class:`StubAdapter`, recording its sessions."""

    def __init__(self, adapter):
        super().__init__(adapter)
        self.started = []

    def start(self, timeout, max_url_length, **kwargs):
        self.started.append((timeout, max_url_length))
        return super().start(timeout, max_url_length, **kwargs)


class ScriptedSession:
    """A placement session stub for strategy tests.

    :param bodies: a dict mapping (path, tuple(params)) to the decoded
        body to return, or to an exception to raise
    :param default: a callable (path, params) returning a body, used for
        requests not in ``bodies``; without it they fail the test
    :param max_version: the microversion placement supports, as a tuple
    :ivar calls: (path, params, version) of every request
    """

    def __init__(self, bodies=None, default=None, max_version=(1, 39)):
        self.bodies = dict(bodies or {})
        self.default = default
        self._max_version = max_version
        self._max_url_length = 8000
        self.requests = 0
        self.calls = []

    def build_url(self, path, params=None):
        return placement.PlacementSession.build_url(self, path, params)

    def max_version(self):
        return self._max_version

    def supports(self, version):
        return self._max_version >= placement.parse_version(version)

    def get(self, path, params=None, version='1.0'):
        self.requests += 1
        params = list(params or ())
        self.calls.append((path, params, version))
        key = (path, tuple(params))
        if key in self.bodies:
            body = self.bodies[key]
        elif self.default is not None:
            body = self.default(path, params)
        else:
            raise AssertionError('unexpected placement request %r' % (key,))
        if isinstance(body, Exception):
            raise body
        return body
