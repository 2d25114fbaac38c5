#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""Base classes for functional tests against a real placement service.

Each test gets its own ``PlacementServer``: starting one (fresh in-memory
database, schema, standard traits, policy) takes 15-50 ms, so sharing a
server between tests would save little and cost isolation.  Tests that
need a large cloud build it once per process with :func:`snapshot_of` and
start each server from the snapshot.
"""

import os

import fixtures
import requests
import testtools

from tests.functional.fixtures import builder
from tests.functional.fixtures import server as placement_server

_SNAPSHOTS = {}


def snapshot_of(key, build):
    """Return a database snapshot of a cloud, building it once per process.

    Call it before this process starts any other placement server, e.g.
    from :meth:`FunctionalTestCase.placement_snapshot`.

    :param key: cache key naming the cloud
    :param build: callable taking a :class:`builder.CloudBuilder` that
        populates an empty placement
    :returns: bytes for ``PlacementServer(snapshot=...)``
    """
    if key not in _SNAPSHOTS:
        with placement_server.PlacementServer() as server:
            build(builder.CloudBuilder(server.endpoint, token=server.token))
            _SNAPSHOTS[key] = server.snapshot()
    return _SNAPSHOTS[key]


class RealPlacementFixture(fixtures.Fixture):
    """Run the real placement service on loopback for one test.

    Not Nova's ``PlacementFixture``: this one serves real HTTP on a port
    and does not patch Nova's report client.

    :param middleware: optional callable ``app -> app`` wrapped around the
        placement application, e.g. to inject faults
    :param max_microversion: optional ``"X.Y"`` cap on the microversions
        the server accepts and advertises
    :param snapshot: optional database snapshot to start from
    """

    def __init__(self, middleware=None, max_microversion=None,
                 snapshot=None):
        super().__init__()
        self.middleware = middleware
        self.max_microversion = max_microversion
        self.snapshot = snapshot
        self.server = None
        self.builder = None

    def _setUp(self):
        self.server = placement_server.PlacementServer(
            middleware=self.middleware,
            max_microversion=self.max_microversion,
            snapshot=self.snapshot)
        self.server.start()
        self.addCleanup(self.server.stop)
        self.builder = builder.CloudBuilder(self.endpoint,
                                            token=self.server.token)

    @property
    def endpoint(self):
        """Base URL of the placement API."""
        return self.server.endpoint

    @property
    def token(self):
        """An admin token accepted by the server."""
        return self.server.token


class FunctionalTestCase(testtools.TestCase):
    """A test case with a private, empty placement service.

    Subclasses may set :attr:`placement_max_microversion` or override
    :meth:`placement_middleware` and :meth:`placement_snapshot` to shape
    the server.
    """

    #: Passed to :class:`RealPlacementFixture` as ``max_microversion``.
    placement_max_microversion = None

    def placement_middleware(self):
        """Return a callable ``app -> app`` to wrap placement, or None."""
        return None

    def placement_snapshot(self):
        """Return a snapshot to start placement from, or None for empty.

        Typically ``snapshot_of('my-cloud', build_function)``.
        """
        return None

    def setUp(self):
        super().setUp()
        timeout = int(os.environ.get('OS_TEST_TIMEOUT', 0) or 0)
        if timeout > 0:
            self.useFixture(fixtures.Timeout(timeout, gentle=True))
        self.placement = self.useFixture(RealPlacementFixture(
            middleware=self.placement_middleware(),
            max_microversion=self.placement_max_microversion,
            snapshot=self.placement_snapshot()))
        self.server = self.placement.server
        self.builder = self.placement.builder
        self.endpoint = self.placement.endpoint

    def placement_request(self, method, path, version=None, **kwargs):
        """Send a raw request to placement as an admin.

        :param method: HTTP method
        :param path: path below the endpoint, with query string
        :param version: microversion ``"X.Y"`` or ``"latest"``; none sent
            when None
        :param kwargs: passed to ``requests.request`` (e.g. ``json``)
        :returns: the ``requests.Response``
        """
        headers = dict(kwargs.pop('headers', None) or {})
        headers.setdefault('X-Auth-Token', self.placement.token)
        if version is not None:
            headers['OpenStack-API-Version'] = 'placement %s' % version
        kwargs.setdefault('timeout', 30)
        return requests.request(method, self.endpoint + path,
                                headers=headers, **kwargs)
