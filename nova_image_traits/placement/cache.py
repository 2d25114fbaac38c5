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
"""Placement clients built from ``[placement]``, one per effective setting.

The adapter is built from the keystoneauth session, auth and adapter
options of the ``[placement]`` group, the options
``nova.utils.get_sdk_adapter`` builds nova's client from.

Clients are cached per effective ``[placement]`` configuration, and built
lazily: nothing is sent, and no adapter exists, until a strategy makes its
first request.
"""

import collections
import os
import threading

from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
from oslo_log import log as logging

from nova_image_traits.conf import placement as placement_conf
from nova_image_traits.placement import client

LOG = logging.getLogger(__name__)

# Effective [placement] settings -> client, least recently used first.
_CLIENTS = collections.OrderedDict()
#: Clients kept per process; the least recently used one is dropped first.
MAX_CLIENTS = 4
_CLIENTS_LOCK = threading.Lock()
_REGISTER_LOCK = threading.Lock()
#: auth_type -> the oslo.config options of its plugin, learnt once per
#: process.
_AUTH_OPTIONS = {}


def _after_fork_in_child():
    # NOTE(founders): a forked child (nova's API and conductor workers)
    # must not share the parent's keep-alive sockets, nor inherit a lock a
    # parent thread held at the fork: it builds its own clients.
    global _CLIENTS_LOCK, _REGISTER_LOCK
    _CLIENTS_LOCK = threading.Lock()
    _REGISTER_LOCK = threading.Lock()
    _CLIENTS.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def build_adapter(conf, timeout=None):
    """Build the placement adapter from ``[placement]`` in ``conf``.

    Nothing is sent to placement or Keystone here.

    :param conf: a ConfigOpts with the ``[placement]`` options registered
    :param timeout: the longest wait of one request (including a Keystone
        token fetch) when ``[placement] timeout`` is not set
    """
    group = placement_conf.GROUP
    auth = ks_loading.load_auth_from_conf_options(conf, group)
    session = ks_loading.load_session_from_conf_options(
        conf, group, auth=auth)
    if session.timeout is None and timeout:
        session.timeout = timeout
    # NOTE(founders): one bounded pool shared by every decision of the process;
    # the client never has more requests in flight than the pool holds.
    for scheme in ('http://', 'https://'):
        session.session.mount(scheme, ks_session.TCPKeepAliveAdapter(
            pool_maxsize=client.POOL_SIZE, pool_block=True))
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
        options = _AUTH_OPTIONS.get(name)
        if options is None:
            options = _AUTH_OPTIONS[name] = tuple(
                ks_loading.get_auth_plugin_conf_options(name))
        values = conf[auth_group]
        if any(o.dest not in values for o in options):
            with _REGISTER_LOCK:
                missing = [o for o in options
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
        found = _CLIENTS.get(key)
        if found is not None:
            _CLIENTS.move_to_end(key)
            return found
        found = client.PlacementClient(
            factory=lambda: _build_for(conf, timeout, key))
        _CLIENTS[key] = found
        while len(_CLIENTS) > MAX_CLIENTS:
            _CLIENTS.popitem(last=False)
        if len(_CLIENTS) > 1:
            LOG.debug('New placement client for changed [placement] '
                      'settings (%d kept)', len(_CLIENTS))
        return found


def _build_for(conf, timeout, key):
    adapter = build_adapter(conf, timeout)
    if (settings(conf), timeout) != key:
        # NOTE(founders): the settings changed between the lookup and this
        # first request: never reuse this client under the old settings.
        with _CLIENTS_LOCK:
            _CLIENTS.pop(key, None)
    return adapter


def reset_clients():
    """Forget cached clients (for tests)."""
    with _CLIENTS_LOCK:
        _CLIENTS.clear()
