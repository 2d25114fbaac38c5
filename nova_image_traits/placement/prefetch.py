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
"""Placement requests sent before the decision that reads them.

A caller that knows early which requests a decision will make (the
nova-api pre-check knows the server and its compute node long before nova's
rebuild reaches the point where it decides) sends them ahead, in worker
threads, and later decides with a :class:`PrefetchingClient`: each
request it sent ahead is answered by that answer, once; every other
request goes to placement as usual. Failures are those of the request
itself, raised when the decision asks for it, so a decision reads exactly
what it would have read by asking then.
"""

import threading
import time

from nova_image_traits import exception
from nova_image_traits.placement import known_traits
from nova_image_traits.placement import query
from nova_image_traits.placement import session as placement_session
from nova_image_traits.placement import workers

#: Requests sent ahead at once, per process; more are not sent ahead.
POOL_SIZE = 10

_WORKERS = workers.Workers(POOL_SIZE, name='nova-image-traits-prefetch')


def run_ahead(func):
    """Start ``func()`` in a worker; a :class:`~.workers.Pending` or None.

    None when every worker is busy: the caller then does it itself.
    """
    return _WORKERS.submit(func)


class PrefetchingClient:
    """A :class:`~.client.PlacementClient` with answers sent for ahead.

    :param client: the process's placement client, whose ``known_traits``
        keeps the traits answers (:mod:`.known_traits`)
    """

    def __init__(self, client):
        self._client = client
        self._lock = threading.Lock()
        self._pending = {}
        #: When the decision must be over (``time.monotonic()``), once
        #: :meth:`begin` was called; the session :meth:`start` opens ends
        #: then at the latest.
        self.deadline = None

    def begin(self, timeout):
        """The decision begins now, and ends within ``timeout`` seconds."""
        self.deadline = time.monotonic() + timeout
        return self.deadline

    def prefetch(self, url, version, timeout, global_request_id=None):
        """Send ``GET url`` now, in a worker; no-op when all are busy.

        :param timeout: seconds the request may take, as a decision's
            ``decision_timeout``
        """
        deadline = time.monotonic() + timeout
        client = self._client
        pending = run_ahead(lambda: client.request(
            url, version, deadline, timeout, global_request_id))
        if pending is not None:
            with self._lock:
                self._pending[(url, version)] = pending

    def prefetch_traits(self, rp_uuid, timeout, global_request_id=None,
                        allocations=None):
        """Send ``GET /resource_providers/{rp_uuid}/traits`` ahead, or not.

        The answer is kept by the process's client
        (:attr:`.PlacementClient.known_traits`). When one is kept and
        ``GET allocations`` was sent ahead too, a worker waits for the
        allocations instead: if they give the provider the generation of
        the kept answer, the decision reads that answer and nothing is
        sent; otherwise the traits are asked then. With nothing kept, the
        traits are asked at once, beside the allocations.

        :param allocations: the URL of the server's ``GET
            /allocations/{consumer}`` sent ahead (version 1.0), or None
        """
        known = self._client.known_traits
        url = '/resource_providers/%s/traits' % query.quote(rp_uuid)
        version = '1.6'
        deadline = time.monotonic() + timeout
        client = self._client
        with self._lock:
            held = (self._pending.get((allocations, '1.0'))
                    if allocations is not None else None)

        def ask():
            return known.remember(rp_uuid, client.request(
                url, version, deadline, timeout, global_request_id))

        def ask_unless_known():
            try:
                generation = known_traits.held_generation(
                    held.result(max(0.0, deadline - time.monotonic())),
                    rp_uuid)
            except Exception:
                # NOTE(nova-image-traits): the decision meets this failure
                # when it reads the allocations; the traits are asked.
                generation = None
            return known.answer(rp_uuid, generation) or ask()

        pending = run_ahead(ask_unless_known if held is not None and
                            known.knows(rp_uuid) else ask)
        if pending is not None:
            with self._lock:
                self._pending[(url, version)] = pending

    def start(self, timeout, max_url_length, version_ttl=None,
              global_request_id=None):
        """Begin the decision (see :meth:`.PlacementClient.start`)."""
        return placement_session.PlacementSession(
            self, timeout, max_url_length, version_ttl=version_ttl,
            global_request_id=global_request_id, deadline=self.deadline)

    def answered(self, url, version):
        """Whether the answer to ``GET url`` sent ahead is already here.

        An answer that arrived is read even after the decision's deadline.
        """
        with self._lock:
            pending = self._pending.get((url, version))
        return pending is not None and pending.done.is_set()

    def request(self, url, version, deadline, limit,
                global_request_id=None):
        """The answer sent for ahead, once; else a request sent now."""
        with self._lock:
            pending = self._pending.pop((url, version), None)
        if pending is None:
            return self._client.request(url, version, deadline, limit,
                                        global_request_id)
        try:
            return pending.result(max(0.0, deadline - time.monotonic()))
        except workers.Abandoned:
            raise exception.DecisionDeadlineExceeded(
                limit=limit,
                waiting='waiting for placement to answer GET %s' % url)

    def max_version(self, session, ttl=None):
        return self._client.max_version(session, ttl)

    def forget_version(self):
        self._client.forget_version()

    def budget(self, remaining):
        return self._client.budget(remaining)
