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
"""Read-only access to placement, the way nova's report client reaches it.

The client is an openstacksdk placement proxy (a keystoneauth adapter) built
from the keystoneauth session, auth and adapter options of the
``[placement]`` group, exactly as ``nova.utils.get_sdk_adapter`` builds
nova's. Retries and per-request timeouts are keystoneauth's
(``connect_retries``, ``status_code_retries``, ``timeout``); this module
adds a deadline per decision and turns every failure into a
:class:`~nova_image_traits.exception.PlacementError` that names its cause.

Nothing here ever writes to placement.
"""

import re
import threading
import time
import urllib.parse
import weakref

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
import openstack
import openstack.exceptions
from oslo_log import log as logging

from nova_image_traits.conf import placement as placement_conf
from nova_image_traits import exception

LOG = logging.getLogger(__name__)

# id(conf) -> (weak reference to conf, client); ConfigOpts is unhashable.
_CLIENTS = {}
# NOTE: placement answers 400 "No such trait(s): A, B." for unknown traits
# in a required parameter (placement.exception.TraitNotFound).
_UNKNOWN_TRAITS = re.compile(r'No such trait\(s\): ([A-Z0-9_, ]+)')
_CLIENTS_LOCK = threading.Lock()
#: Connections kept to placement per process (requests' default size).
POOL_SIZE = 10


def parse_version(text):
    """Return a microversion string such as '1.31' as a tuple (1, 31)."""
    major, _sep, minor = str(text).partition('.')
    return int(major), int(minor)


def format_version(version):
    return '%d.%d' % tuple(version)


def build_adapter(conf, timeout=None):
    """Build the placement proxy from ``[placement]`` in ``conf``.

    :param conf: a ConfigOpts with the ``[placement]`` options registered
    :param timeout: the longest wait for placement's version document,
        which openstacksdk reads while building the proxy, when
        ``[placement] timeout`` is not set
    """
    group = placement_conf.GROUP
    auth = ks_loading.load_auth_from_conf_options(conf, group)
    session = ks_loading.load_session_from_conf_options(
        conf, group, auth=auth)
    if session.timeout is None and timeout:
        session.timeout = timeout
    # NOTE: one bounded pool shared by every decision of the process.
    # requests' default pool does not block: every thread beyond its size
    # opens a connection of its own and throws it away after one request.
    for scheme in ('http://', 'https://'):
        session.session.mount(scheme, ks_session.TCPKeepAliveAdapter(
            pool_maxsize=POOL_SIZE, pool_block=True))
    conn = openstack.connection.Connection(
        session=session, oslo_conf=conf,
        service_types={placement_conf.DEFAULT_SERVICE_TYPE},
        app_name='nova-image-traits')
    proxy = conn.placement
    proxy.additional_headers = {'accept': 'application/json'}
    return proxy


def get_client(conf, timeout=None):
    """Return this process's client for ``conf``, building it once.

    One client per process means one microversion negotiation per process
    and one connection pool shared by every decision.

    :param timeout: see :func:`build_adapter`
    :raises: PlacementUnreachable when the client cannot be built
    """
    with _CLIENTS_LOCK:
        ref, client = _CLIENTS.get(id(conf), (None, None))
    if ref is not None and ref() is conf:
        return client
    # NOTE: built outside the lock: openstacksdk reads placement's version
    # document here, and a placement that is down must not make every
    # other decision of the process queue behind this one.
    try:
        client = PlacementClient(build_adapter(conf, timeout))
    except (ks_exc.ClientException, openstack.exceptions.SDKException) as e:
        raise exception.PlacementUnreachable(url='/', why=_why(e))
    with _CLIENTS_LOCK:
        ref, first = _CLIENTS.get(id(conf), (None, None))
        if ref is not None and ref() is conf:
            return first
        _CLIENTS[id(conf)] = (weakref.ref(conf), client)
        return client


def reset_clients():
    """Forget cached clients (for tests and configuration reloads)."""
    with _CLIENTS_LOCK:
        _CLIENTS.clear()


class PlacementClient(object):
    """A process-wide, thread-safe, read-only placement client.

    :param adapter: a keystoneauth ``Adapter`` (or openstacksdk proxy)
        whose relative URLs reach placement
    """

    def __init__(self, adapter):
        self._adapter = adapter
        session = getattr(adapter, 'session', None)
        #: [placement] timeout, keystoneauth's per-request timeout.
        self.request_timeout = getattr(session, 'timeout', None)
        #: keystoneauth's retries and their delays ([placement]).
        self.retries = {
            'connect_retries': getattr(adapter, 'connect_retries', None),
            'status_code_retries': getattr(adapter, 'status_code_retries',
                                           None),
        }
        self.delays = {
            'connect_retry_delay': getattr(adapter, 'connect_retry_delay',
                                           None),
            'status_code_retry_delay': getattr(
                adapter, 'status_code_retry_delay', None),
        }
        self._max_version = None

    def start(self, timeout, max_url_length):
        """Begin a decision: a :class:`PlacementSession` with a deadline.

        :param timeout: seconds the whole decision may wait for placement
        :param max_url_length: the longest URL that may be sent
        """
        return PlacementSession(self, timeout, max_url_length)

    def max_version(self, session):
        """Return the highest microversion placement supports.

        It is negotiated once per process, through ``session`` so that the
        request is counted in the decision that made it.
        """
        if self._max_version is None:
            # NOTE: not under a lock: two threads may both ask once, which
            # is harmless, while a lock would make every decision wait for
            # a placement that hangs.
            body = session.get('/', version=None)
            try:
                versions = body['versions']
                top = max(parse_version(v['max_version']) for v in versions)
            except (KeyError, TypeError, ValueError) as e:
                raise exception.PlacementMalformedResponse(
                    method='GET', url='/',
                    why='no max_version in the version document '
                        '(%s)' % type(e).__name__)
            LOG.debug('Placement supports microversions up to %s',
                      format_version(top))
            self._max_version = top
        return self._max_version

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
        kwargs = {}
        attempts = 1
        delays_left = remaining / 2.0
        for kind in ('connect', 'status_code'):
            retries = self.retries[kind + '_retries'] or 0
            # NOTE: a fixed delay; keystoneauth's default backs off
            # exponentially from 0.5 s, which no deadline can plan for.
            delay = self.delays[kind + '_retry_delay'] or 0.5
            retries = max(0, min(retries, int(delays_left / delay)))
            delays_left -= retries * delay
            kwargs[kind + '_retries'] = retries
            kwargs[kind + '_retry_delay'] = delay
            attempts += retries
        timeout = remaining if attempts == 1 else remaining / 2.0 / attempts
        if self.request_timeout:
            timeout = min(timeout, self.request_timeout)
        kwargs['timeout'] = timeout
        return kwargs

    def request(self, url, version, remaining):
        kwargs = {'raise_exc': False}
        kwargs.update(self.budget(remaining))
        if version is not None:
            kwargs['microversion'] = version
        return self._adapter.get(url, **kwargs)


class PlacementSession(object):
    """Placement requests made for one decision, counted and time-bounded.

    :ivar requests: the number of requests sent so far
    """

    def __init__(self, client, timeout, max_url_length):
        self.client = client
        self.requests = 0
        self._deadline = time.monotonic() + timeout
        self._timeout = timeout
        self._max_url_length = max_url_length

    def max_version(self):
        return self.client.max_version(self)

    def supports(self, version):
        """Whether placement supports microversion ``version`` ('1.31')."""
        return self.max_version() >= parse_version(version)

    def build_url(self, path, params=None):
        """Return ``path`` with ``params`` URL-encoded, checked for length.

        :param path: the path, every variable part already quoted
        :param params: a list of (name, value) pairs
        :raises: RequestTooLarge
        """
        url = path
        if params:
            url += '?' + urllib.parse.urlencode(params, safe=',:!')
        if len(url) > self._max_url_length:
            raise exception.RequestTooLarge(length=len(url),
                                            limit=self._max_url_length)
        return url

    def get(self, path, params=None, version='1.0'):
        """GET ``path`` and return the decoded JSON body.

        :raises: PlacementError subclasses naming the cause
        """
        url = self.build_url(path, params)
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise exception.DecisionDeadlineExceeded(limit=self._timeout)
        self.requests += 1
        try:
            resp = self.client.request(url, version, remaining)
        except ks_exc.ConnectTimeout as e:
            raise exception.PlacementTimeout(url=url, why=_why(e))
        except ks_exc.RequestTimeout as e:
            raise exception.PlacementTimeout(url=url, why=_why(e))
        except (ks_exc.ConnectFailure, ks_exc.EndpointNotFound,
                ks_exc.DiscoveryFailure, ks_exc.SSLError) as e:
            raise exception.PlacementUnreachable(url=url, why=_why(e))
        except ks_exc.UnknownConnectionError as e:
            # requests' ChunkedEncodingError and friends: the body was cut
            # short or could not be decoded.
            raise exception.PlacementMalformedResponse(
                method='GET', url=url, why=_why(e))
        except ks_exc.ClientException as e:
            raise exception.PlacementError(why=_why(e))
        if resp.status_code != 200:
            raise _http_error(url, resp)
        try:
            body = resp.json()
        except ValueError as e:
            raise exception.PlacementMalformedResponse(
                method='GET', url=url, why='invalid JSON (%s)' % e)
        if not isinstance(body, dict):
            raise exception.PlacementMalformedResponse(
                method='GET', url=url, why='the body is not a JSON object')
        return body


def _why(exc):
    return '%s: %s' % (type(exc).__name__, exc)


def _http_error(url, resp):
    try:
        errors = resp.json().get('errors') or []
        why = '; '.join(str(e.get('detail') or e.get('title') or '')
                        for e in errors) or resp.reason
    except Exception:
        why = resp.reason or 'no error document'
    why = str(why).strip().replace('\n', ' ')
    # NOTE: before shortening: the names may be long and many.
    unknown = _UNKNOWN_TRAITS.search(why)
    why = why[:300]
    if resp.status_code == 400 and unknown:
        names = sorted(n.strip() for n in unknown.group(1).split(',')
                       if n.strip())
        return exception.PlacementUnknownTraits(names=', '.join(names))
    if resp.status_code == 406:
        err = exception.PlacementBadResponse(
            method='GET', url=url, status=406,
            why='microversion not supported: %s' % why)
        err.cause = 'unsupported-microversion'
        return err
    return exception.PlacementBadResponse(
        method='GET', url=url, status=resp.status_code, why=why)


def candidate_params(query, root=None, limit=None, image_traits=()):
    """Return ``GET /allocation_candidates`` parameters for a boot query.

    Groups without resources are left out, as placement requires, unless
    they are numbered and named in ``same_subtree`` (microversion 1.36).
    Required traits are listed, forbidden ones prefixed with ``!``.

    :param query: a :class:`~nova_image_traits.flavor.ResourceQuery`
    :param root: restrict every group to this provider's tree
    :param limit: the number of candidates wanted, or None for all
    :param image_traits: traits to require in the unsuffixed group, where
        nova puts the image's
    :returns: a list of (name, value) pairs
    """
    params = []
    numbered = set()
    subtree = {sfx for suffixes in query.same_subtree for sfx in suffixes}
    for group in query.groups:
        sfx = group.suffix
        if not group.resources and not (sfx and sfx in subtree):
            continue
        if sfx:
            numbered.add(sfx)
        if group.resources:
            params.append(('resources' + sfx, ','.join(
                '%s:%d' % item for item in sorted(group.resources.items()))))
        required = set(group.required)
        if not sfx:
            required |= set(image_traits)
        traits = sorted(required) + ['!' + t for t in sorted(group.forbidden)]
        if traits:
            params.append(('required' + sfx, ','.join(traits)))
        params.extend(('member_of' + sfx, m) for m in group.member_of)
        if root:
            params.append(('in_tree' + sfx, root))
    if len(numbered) > 1:
        params.append(('group_policy', query.group_policy or 'none'))
    roots = sorted(query.root_required) + [
        '!' + t for t in sorted(query.root_forbidden)]
    if roots:
        params.append(('root_required', ','.join(roots)))
    for suffixes in query.same_subtree:
        if set(suffixes) <= numbered:
            params.append(('same_subtree', ','.join(sorted(suffixes))))
    if limit is not None:
        params.append(('limit', str(limit)))
    return params


def require(value, kind, url, what):
    """Check a response field's type, else raise a malformed-body error."""
    if not isinstance(value, kind):
        raise exception.PlacementMalformedResponse(
            method='GET', url=url, why='%s is not a %s' % (
                what, kind.__name__))
    return value


def quote(value):
    """Quote one path segment (a UUID we were given, never trusted)."""
    return urllib.parse.quote(str(value), safe='')
