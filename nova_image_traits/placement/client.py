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
"""The placement client of a process: thread-safe, read-only, bounded.

Every GET names its microversion explicitly; nothing depends on
openstacksdk's version discovery, so a failure names the real cause (a
refused connection, a timeout, a TLS error) and the URL. Retries and
per-request timeouts are keystoneauth's (``connect_retries``,
``status_code_retries``, ``timeout``); the client fits them into a deadline
per decision that holds whatever the client is waiting for
(:mod:`~nova_image_traits.placement.workers`). Without keystoneauth's
connection retries, a GET whose connection broke before its answer (a
kept-alive connection the server had closed) is sent once more
(:func:`broke_after_connecting`).

Nothing here ever writes to placement.
"""

import http.client
import threading
import time

from keystoneauth1 import exceptions as ks_exc
from oslo_log import log as logging

from nova_image_traits import exception
from nova_image_traits.placement import known_traits
from nova_image_traits.placement import query
from nova_image_traits.placement import session as placement_session
from nova_image_traits.placement import workers

LOG = logging.getLogger(__name__)

#: Concurrent placement requests per client (and its connection pool size).
POOL_SIZE = 10
#: How much longer than the time left a decision waits for a request that
#: keystoneauth is about to time out itself, to report its precise cause.
_GRACE = 0.05
#: The least time left in a decision for which a broken request is sent
#: again: with less, the second attempt would only turn the broken
#: connection into a timeout.
_RESEND_LEFT = 0.1
#: What the socket raised when a connection broke after it was made.
_BROKEN = (http.client.RemoteDisconnected, ConnectionResetError,
           ConnectionAbortedError, BrokenPipeError)


def broke_after_connecting(error):
    """Whether keystoneauth's ``ConnectFailure`` is a broken connection.

    True when the connection was made and then closed or reset before an
    answer came: typically a kept-alive connection of the pool that
    placement's server had just closed (its keep-alive timeout) while the
    request went out. False for a connection refused or never made.

    keystoneauth raises ``ConnectFailure`` while it handles requests'
    ``ConnectionError``, whose first argument is then urllib3's
    ``ProtocolError('Connection aborted.', <the socket's error>)`` (urllib3
    1.26 and 2.x); a refused connection's is a ``MaxRetryError``, whose
    arguments hold no socket error.
    """
    raised = error.__context__
    inner = raised.args[0] if raised is not None and raised.args else None
    return any(isinstance(a, _BROKEN) for a in getattr(inner, 'args', ()))


class PlacementClient:
    """A process-wide, thread-safe, read-only placement client.

    At most :data:`POOL_SIZE` requests are in flight at once; a decision
    waits for a free slot no longer than its deadline.

    :param adapter: a keystoneauth ``Adapter`` (or openstacksdk proxy)
        whose relative URLs reach placement
    :param factory: instead of ``adapter``, a callable returning one,
        called on the first request (inside that decision's deadline)
    """

    def __init__(self, adapter=None, factory=None):
        self._adapter = adapter
        self._factory = factory
        self._build_lock = threading.Lock()
        self._workers = workers.Workers(POOL_SIZE)
        # (version tuple, monotonic time negotiated), or None.
        self._version = None
        #: The traits answers this client was given, by generation.
        self.known_traits = known_traits.KnownTraits()

    @property
    def adapter(self):
        """The adapter, built on first use."""
        if self._adapter is None:
            with self._build_lock:
                if self._adapter is None:
                    self._adapter = self._factory()
        return self._adapter

    def start(self, timeout, max_url_length, version_ttl=None,
              global_request_id=None):
        """Begin a decision: a :class:`PlacementSession` with a deadline.

        :param timeout: seconds the whole decision may wait for placement
        :param max_url_length: the longest URL that may be sent
        :param version_ttl: seconds a negotiated microversion is trusted;
            None trusts it for the life of the client
        :param global_request_id: sent as ``X-OpenStack-Request-ID``
        """
        return placement_session.PlacementSession(
            self, timeout, max_url_length, version_ttl=version_ttl,
            global_request_id=global_request_id)

    def max_version(self, session, ttl=None):
        """Return the highest microversion placement supports.

        It is negotiated on first use, again when it is older than ``ttl``
        seconds, and after :meth:`forget_version`, through ``session`` so
        that the request is counted in the decision that made it.
        """
        known = self._version
        if known is not None and (
                ttl is None or time.monotonic() - known[1] < ttl):
            return known[0]
        # NOTE(founders): not under a lock: two threads may both ask once,
        # which is harmless, while a lock would make every decision wait for a
        # placement that hangs.
        body = session.get('/', version=None)
        try:
            versions = body['versions']
            top = max(query.parse_version(v['max_version']) for v in versions)
        except (KeyError, TypeError, ValueError) as e:
            raise exception.PlacementMalformedResponse(
                url='/', why='no max_version in the version document '
                    '(%s)' % type(e).__name__)
        if known is not None and known[0] != top:
            LOG.info('Placement now supports microversions up to %(new)s '
                     '(was %(old)s)', {'new': query.format_version(top),
                                       'old': query.format_version(known[0])})
        else:
            LOG.debug('Placement supports microversions up to %s',
                      query.format_version(top))
        self._version = (top, time.monotonic())
        return top

    def forget_version(self):
        """Negotiate the microversion again on the next request."""
        self._version = None

    def budget(self, remaining):
        """Fit keystoneauth's retries into ``remaining`` seconds.

        Returns the keyword arguments of one request: keystoneauth's retry
        counts and fixed delays from ``[placement]``, trimmed so that
        the delays take at most half of ``remaining``, and a timeout
        per attempt such that all attempts take at most the other half.
        Without retries the one attempt may use all of it. Never longer
        than ``[placement] timeout`` per attempt.

        :param remaining: seconds left in the decision
        """
        adapter = self.adapter
        kwargs = {}
        attempts = 1
        delays_left = remaining / 2.0
        for kind in ('connect', 'status_code'):
            retries = getattr(adapter, kind + '_retries', None) or 0
            # NOTE(founders): a fixed delay; keystoneauth's default backs off
            # exponentially from 0.5 s, which no deadline can plan for.
            delay = getattr(adapter, kind + '_retry_delay', None) or 0.5
            retries = max(0, min(retries, int(delays_left / delay)))
            delays_left -= retries * delay
            kwargs[kind + '_retries'] = retries
            kwargs[kind + '_retry_delay'] = delay
            attempts += retries
        timeout = remaining if attempts == 1 else remaining / 2.0 / attempts
        # NOTE(founders): [placement] timeout, keystoneauth's per request.
        request_timeout = getattr(getattr(adapter, 'session', None),
                                  'timeout', None)
        kwargs['timeout'] = min(timeout, request_timeout or timeout)
        return kwargs

    def answered(self, url, version):
        """Whether ``GET url`` is answered already: never, here."""
        return False

    def request(self, url, version, deadline, limit,
                global_request_id=None):
        """Send one GET; return the response before ``deadline``.

        The adapter build, a Keystone token fetch, the wait for a free
        connection, keystoneauth's retries and the request itself all
        happen before ``deadline`` (a ``time.monotonic()`` value), or the
        decision stops waiting.

        :param limit: the decision's timeout, for the error message
        :raises: DecisionDeadlineExceeded, or keystoneauth's exceptions
        """
        def run():
            if deadline - time.monotonic() <= 0:
                # NOTE(founders): its decision stopped waiting before a
                # thread took it: nobody reads the answer, so send nothing.
                raise exception.DecisionDeadlineExceeded(
                    limit=limit, waiting='before a thread took its request')
            adapter = self.adapter
            kwargs = dict(self.budget(max(0.001, deadline - time.monotonic())),
                          raise_exc=False)
            if version is not None:
                kwargs['microversion'] = version
            if global_request_id:
                kwargs['global_request_id'] = global_request_id
            try:
                return adapter.get(url, **kwargs)
            except ks_exc.ConnectFailure as e:
                # NOTE(nova-image-traits): only where [placement]
                # connect_retries asks keystoneauth for none (not where the
                # deadline trimmed them), and while there is time for it. A
                # GET is safe to send again: once, at once; urllib3 put
                # no connection back for the broken one.
                if (getattr(adapter, 'connect_retries', None) or
                        not broke_after_connecting(e) or
                        deadline - time.monotonic() < _RESEND_LEFT):
                    raise
                LOG.info('The connection of GET %(url)s broke before its '
                         'answer (%(error)s); sending it again once.',
                         {'url': url, 'error': e})
            kwargs.update(self.budget(deadline - time.monotonic()))
            return adapter.get(url, **kwargs)

        # NOTE(founders): a worker thread is what makes the deadline hold (see
        # nova_image_traits.placement.workers).
        try:
            return self._workers.call(
                run, lambda: deadline - time.monotonic(), grace=_GRACE)
        except workers.Abandoned as e:
            if e.waited_for == 'slot':
                raise exception.PlacementPoolTimeout(url=url, limit=limit)
            raise exception.DecisionDeadlineExceeded(
                limit=limit,
                waiting='waiting for placement to answer GET %s' % url)
