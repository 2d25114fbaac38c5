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

The client is a keystoneauth adapter built from the keystoneauth session,
auth and adapter options of the ``[placement]`` group, the options
``nova.utils.get_sdk_adapter`` builds nova's client from. Every GET names
its microversion explicitly; nothing depends on openstacksdk's version
discovery, so a failure names the real cause (a refused connection, a
timeout, a TLS error) and the URL. Retries and per-request timeouts are
keystoneauth's (``connect_retries``, ``status_code_retries``, ``timeout``);
this module adds a deadline per decision that holds whatever the client is
waiting for, and turns every failure into a
:class:`~nova_image_traits.exception.PlacementError` that names its cause.

Clients are cached per effective ``[placement]`` configuration, and built
lazily: nothing is sent, and no adapter exists, until a strategy makes its
first request.

Nothing here ever writes to placement.
"""

import collections
import re
import threading
import time
import urllib.parse

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
from oslo_log import log as logging

from nova_image_traits.conf import placement as placement_conf
from nova_image_traits import exception

LOG = logging.getLogger(__name__)

# Effective [placement] settings -> client, least recently used first.
_CLIENTS = collections.OrderedDict()
#: Clients kept per process; the least recently used one is dropped first.
MAX_CLIENTS = 4
# NOTE: placement answers 400 "No such trait(s): A, B." for unknown traits
# in a required parameter (placement.exception.TraitNotFound).
_UNKNOWN_TRAITS = re.compile(r'No such trait\(s\): ([A-Z0-9_, ]+)')
_CLIENTS_LOCK = threading.Lock()
_REGISTER_LOCK = threading.Lock()
#: Concurrent placement requests per client (and its connection pool size).
POOL_SIZE = 10
#: How much longer than the time left a decision waits for a request that
#: keystoneauth is about to time out itself, to report its precise cause.
_GRACE = 0.05


def parse_version(text):
    """Return a microversion string such as '1.31' as a tuple (1, 31)."""
    major, _sep, minor = str(text).partition('.')
    return int(major), int(minor)


def format_version(version):
    return '%d.%d' % tuple(version)


def build_adapter(conf, timeout=None, pool_size=None):
    """Build the placement adapter from ``[placement]`` in ``conf``.

    Nothing is sent to placement or Keystone here.

    :param conf: a ConfigOpts with the ``[placement]`` options registered
    :param timeout: the longest wait of one request (including a Keystone
        token fetch) when ``[placement] timeout`` is not set
    :param pool_size: connections kept to placement, :data:`POOL_SIZE` by
        default
    """
    group = placement_conf.GROUP
    auth = ks_loading.load_auth_from_conf_options(conf, group)
    session = ks_loading.load_session_from_conf_options(
        conf, group, auth=auth)
    if session.timeout is None and timeout:
        session.timeout = timeout
    # NOTE: one bounded pool shared by every decision of the process; the
    # client never has more requests in flight than the pool holds.
    size = pool_size or POOL_SIZE
    for scheme in ('http://', 'https://'):
        session.session.mount(scheme, ks_session.TCPKeepAliveAdapter(
            pool_maxsize=size, pool_block=True))
    return ks_loading.load_adapter_from_conf_options(
        conf, group, session=session, auth=auth,
        additional_headers={'accept': 'application/json'},
        raise_exc=False)


def _freeze(value):
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return value


def _group_values(conf, group):
    values = conf[group]
    return tuple((name, _freeze(values[name])) for name in sorted(values))


def settings(conf):
    """Return the effective ``[placement]`` settings of ``conf``.

    Every option registered in the group, and the options of the auth plugin
    it names (registered here when keystoneauth has not loaded the plugin
    yet, exactly as it would), in a hashable form. Two configurations with
    the same settings reach placement in the same way.

    :raises: oslo_config.cfg.Error when a value cannot be read
    """
    group = placement_conf.GROUP
    auth_group = conf[group].auth_section or group
    name = conf[auth_group].auth_type
    if name:
        loader = ks_loading.get_plugin_loader(name)
        with _REGISTER_LOCK:
            missing = [o._to_oslo_opt() for o in loader.get_options()
                       if o.dest not in conf[auth_group]]
            if missing:
                conf.register_opts(missing, group=auth_group)
    key = (_group_values(conf, group),)
    if auth_group != group:
        key += (_group_values(conf, auth_group),)
    return key


def get_client(conf, timeout=None):
    """Return this process's client for the ``[placement]`` of ``conf``.

    Clients are kept per effective ``[placement]`` configuration (see
    :func:`settings`) and per ``timeout``: a changed setting, a reload or
    another test's placement gives a new client, and at most
    :data:`MAX_CLIENTS` are kept. The client is lazy: this sends nothing.

    :param timeout: see :func:`build_adapter`
    """
    key = (settings(conf), timeout)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is not None:
            _CLIENTS.move_to_end(key)
            return client
        client = PlacementClient(
            factory=lambda: _build_for(conf, timeout, key))
        _CLIENTS[key] = client
        while len(_CLIENTS) > MAX_CLIENTS:
            _CLIENTS.popitem(last=False)
        if len(_CLIENTS) > 1:
            LOG.debug('New placement client for changed [placement] '
                      'settings (%d kept)', len(_CLIENTS))
        return client


def _build_for(conf, timeout, key):
    adapter = build_adapter(conf, timeout)
    if (settings(conf), timeout) != key:
        # NOTE: the settings changed between the lookup and this first
        # request: never reuse this client under the old settings.
        with _CLIENTS_LOCK:
            _CLIENTS.pop(key, None)
    return adapter


def reset_clients():
    """Forget cached clients (for tests)."""
    with _CLIENTS_LOCK:
        _CLIENTS.clear()


class PlacementClient(object):
    """A process-wide, thread-safe, read-only placement client.

    :param adapter: a keystoneauth ``Adapter`` (or openstacksdk proxy)
        whose relative URLs reach placement
    :param factory: instead of ``adapter``, a callable returning one,
        called on the first request (inside that decision's deadline)
    :param pool_size: the most requests in flight at once; a decision
        waits for a free slot no longer than its deadline
    """

    def __init__(self, adapter=None, factory=None, pool_size=None):
        self._adapter = None
        self._factory = factory
        self._build_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(pool_size or POOL_SIZE)
        self.request_timeout = None
        self.retries = {'connect_retries': None,
                        'status_code_retries': None}
        self.delays = {'connect_retry_delay': None,
                       'status_code_retry_delay': None}
        # (version tuple, monotonic time negotiated), or None.
        self._version = None
        if adapter is not None:
            self._use(adapter)

    def _use(self, adapter):
        session = getattr(adapter, 'session', None)
        #: [placement] timeout, keystoneauth's per-request timeout.
        self.request_timeout = getattr(session, 'timeout', None)
        #: keystoneauth's retries and their delays ([placement]).
        for kind in ('connect', 'status_code'):
            self.retries[kind + '_retries'] = getattr(
                adapter, kind + '_retries', None)
            self.delays[kind + '_retry_delay'] = getattr(
                adapter, kind + '_retry_delay', None)
        self._adapter = adapter

    @property
    def adapter(self):
        """The adapter, built on first use."""
        if self._adapter is None:
            with self._build_lock:
                if self._adapter is None:
                    self._use(self._factory())
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
        return PlacementSession(self, timeout, max_url_length,
                                version_ttl=version_ttl,
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
        # NOTE: not under a lock: two threads may both ask once, which is
        # harmless, while a lock would make every decision wait for a
        # placement that hangs.
        body = session.get('/', version=None)
        try:
            versions = body['versions']
            top = max(parse_version(v['max_version']) for v in versions)
        except (KeyError, TypeError, ValueError) as e:
            raise exception.PlacementMalformedResponse(
                method='GET', url='/',
                why='no max_version in the version document '
                    '(%s)' % type(e).__name__)
        if known is not None and known[0] != top:
            LOG.info('Placement now supports microversions up to %(new)s '
                     '(was %(old)s)', {'new': format_version(top),
                                       'old': format_version(known[0])})
        else:
            LOG.debug('Placement supports microversions up to %s',
                      format_version(top))
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
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not self._slots.acquire(timeout=remaining):
            raise exception.PlacementPoolTimeout(limit=limit, url=url)
        box = {}
        done = threading.Event()

        def run():
            try:
                adapter = self.adapter
                kwargs = {'raise_exc': False}
                kwargs.update(self.budget(
                    max(0.001, deadline - time.monotonic())))
                if version is not None:
                    kwargs['microversion'] = version
                if global_request_id:
                    kwargs['global_request_id'] = global_request_id
                box['response'] = adapter.get(url, **kwargs)
            except BaseException as e:
                box['error'] = e
            finally:
                self._slots.release()
                done.set()

        # NOTE: a thread per request is what makes the deadline hold:
        # neither a Keystone token fetch nor keystoneauth's retries can be
        # interrupted, and they must not hold the decision (nor nova's RPC
        # worker) past it. The abandoned request ends on its own timeout.
        worker = threading.Thread(target=run, daemon=True,
                                  name='nova-image-traits-placement')
        worker.start()
        if not done.wait(max(0.0, deadline - time.monotonic()) + _GRACE):
            raise exception.DecisionDeadlineExceeded(limit=limit)
        if 'error' in box:
            raise box['error']
        return box['response']


class PlacementSession(object):
    """Placement requests made for one decision, counted and time-bounded.

    :ivar requests: the number of requests sent so far
    """

    def __init__(self, client, timeout, max_url_length, version_ttl=None,
                 global_request_id=None):
        self.client = client
        self.requests = 0
        self._deadline = time.monotonic() + timeout
        self._timeout = timeout
        self._max_url_length = max_url_length
        self._version_ttl = version_ttl
        self._renegotiated = False
        self.global_request_id = global_request_id

    def max_version(self):
        return self.client.max_version(self, self._version_ttl)

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
        if self._deadline - time.monotonic() <= 0:
            raise exception.DecisionDeadlineExceeded(limit=self._timeout)
        self.requests += 1
        try:
            resp = self.client.request(url, version, self._deadline,
                                       self._timeout,
                                       self.global_request_id)
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
        if (resp.status_code == 406 and version is not None and
                not self._renegotiated):
            self._version_refused(url, version)
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

    def _version_refused(self, url, version):
        """Placement refused ``version``: was it rolled back?

        Negotiates again (once per decision). When placement no longer
        supports ``version``, raises PlacementVersionChanged so that the
        strategy can ask again with what placement supports now; otherwise
        returns and the 406 is an error.
        """
        self._renegotiated = True
        self.client.forget_version()
        top = self.max_version()
        if top < parse_version(version):
            raise exception.PlacementVersionChanged(
                url=url, version=version, max_version=format_version(top))


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
