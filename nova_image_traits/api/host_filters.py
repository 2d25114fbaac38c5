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
"""nova's rebuild filters, run in nova-api for the server's own host.

With ``[image_traits] precheck_scheduler_filters``, the pre-check runs what
nova's scheduler runs on a rebuild with a new image, for the one host it
may land on, and refuses what a filter refuses there:

* the filters are ``[filter_scheduler] enabled_filters``, found among
  ``available_filters`` by class name, as nova's ``HostManager`` finds
  them (nova's ``HostFilterHandler.get_matching_classes``), less
  ``ImageTraitsFilter``, which the pre-check decides already; loaded once
  per process and configuration, as the scheduler does at start;
* the host is a ``HostState`` of nova's, updated from the server's
  ``ComputeNode`` (read already by :class:`.decide.Ahead`) and the host's
  aggregates (``AggregateList.get_by_host``, one API database query). Its
  instances are read (one cell database query) only when an enabled
  ``RUN_ON_REBUILD`` filter is not one of nova's own, none of which reads
  them. ``HostManager`` is not used: it loads every aggregate, cell and
  compute node;
* the request spec is a clone carrying the new image and marked as nova's
  rebuild marks it (``scheduler_hints['_nova_check_type'] = ['rebuild']``),
  so that nova's ``BaseHostFilter`` runs only the ``RUN_ON_REBUILD``
  filters (``nova.scheduler.utils.request_is_rebuild``).

Each filter runs through nova's ``HostFilterHandler.get_filtered_objects``,
one at a time, so that the refusal names the filter. A filter that cannot
be loaded, or raises, never refuses: :func:`refusal` logs a WARNING and the
rebuild goes on to nova. A refusal is a logged decision like the engine's
(cause ``refused-by-scheduler-filter``), made before the engine runs.
"""

import importlib
import inspect
import threading
import time

from oslo_log import log as logging

import nova.conf
from nova import context as nova_context
from nova import objects
from nova.scheduler import filters as nova_filters
from nova.scheduler import host_manager
from nova.scheduler import utils as scheduler_utils

from nova_image_traits import decision as nit_decision
from nova_image_traits.filters import image_traits_filter
from nova_image_traits.reasons import scheduler_filter as filter_reason

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF

#: The hint nova's ``API.rebuild`` sets, and its value.
CHECK_TYPE, REBUILD = '_nova_check_type', ['rebuild']
#: The package of nova's own filters.
NOVA_FILTERS = 'nova.scheduler.filters.'
#: Every name of nova's this relies on: ``(module, attribute path)``.
NAMES = (
    ('nova.scheduler.host_manager', 'HostState.update'),
    ('nova.scheduler.filters', 'HostFilterHandler.get_matching_classes'),
    ('nova.scheduler.filters', 'HostFilterHandler.get_filtered_objects'),
    ('nova.scheduler.filters', 'BaseHostFilter.RUN_ON_REBUILD'),
    ('nova.scheduler.utils', 'request_is_rebuild'),
    ('nova.objects', 'AggregateList.get_by_host'),
    ('nova.objects', 'InstanceList.get_by_host'),
)
#: The parameters of ``HostState`` and of its ``update`` passed by name.
STATE_PARAMS = ('host', 'node', 'cell_uuid')
UPDATE_PARAMS = ('compute', 'aggregates', 'inst_dict')

_lock = threading.Lock()
#: ``{(available, enabled): Loaded}``: the filters of one configuration.
_loaded = {}


class FiltersUnavailable(Exception):
    """The filters cannot be run here: the rebuild goes on to nova."""


class Loaded:
    """nova's filter handler and the filters the pre-check runs."""

    def __init__(self, handler, filters):
        self.handler = handler
        self.filters = filters
        #: Whether a filter may read the host's instances.
        self.reads_instances = any(
            f.RUN_ON_REBUILD and
            not type(f).__module__.startswith(NOVA_FILTERS)
            for f in filters)


def verify():
    """Check every name of nova's this module relies on, or raise."""
    objects.register_all()  # done already in nova-api; idempotent
    for module, path in NAMES:
        obj = importlib.import_module(module)
        for attr in path.split('.'):
            if not hasattr(obj, attr):
                raise FiltersUnavailable('%s.%s does not exist in this nova'
                                         % (module, path))
            obj = getattr(obj, attr)
    for func, params in ((host_manager.HostState.__init__, STATE_PARAMS),
                         (host_manager.HostState.update, UPDATE_PARAMS)):
        found = tuple(inspect.signature(func).parameters)
        if not set(params) <= set(found):
            raise FiltersUnavailable('HostState.%s%s lacks %s' % (
                func.__name__, '(%s)' % ', '.join(found), ', '.join(params)))


def load(conf=CONF):
    """The filters of ``conf``, loaded once per configuration.

    :raises FiltersUnavailable: a filter is not found among
        ``available_filters``, or cannot be imported or created
    """
    opts = conf.filter_scheduler
    key = (tuple(opts.available_filters), tuple(opts.enabled_filters))
    with _lock:
        if key not in _loaded:
            _loaded[key] = _load(*key)
        return _loaded[key]


def _load(available, enabled):
    try:
        verify()
        handler = nova_filters.HostFilterHandler()
        classes = {cls.__name__: cls
                   for cls in handler.get_matching_classes(available)}
        missing = [name for name in enabled if name not in classes]
        if missing:
            raise FiltersUnavailable(
                '%s not found in [filter_scheduler] available_filters'
                % ', '.join(missing))
        filters = [classes[name]() for name in enabled
                   if not issubclass(classes[name],
                                     image_traits_filter.ImageTraitsFilter)]
    except FiltersUnavailable:
        raise
    except Exception as e:
        raise FiltersUnavailable('%s: %s' % (type(e).__name__, e))
    return Loaded(handler, filters)


def rebuild_spec(request_spec, image_meta, flavor=None):
    """A clone of ``request_spec`` for a rebuild to ``image_meta``.

    As nova's ``API.rebuild`` makes it before it casts to the conductor:
    the new image, and the hint that has the scheduler check only the
    server's host with its ``RUN_ON_REBUILD`` filters.
    """
    spec = request_spec.obj_clone()
    spec.image = image_meta
    if flavor is not None:
        spec.flavor = flavor
    hints = dict(spec.scheduler_hints or {}) if (
        'scheduler_hints' in spec) else {}
    hints[CHECK_TYPE] = list(REBUILD)
    spec.scheduler_hints = hints
    if not scheduler_utils.request_is_rebuild(spec):
        raise FiltersUnavailable('nova no longer reads the hint %s=%s as a '
                                 'rebuild' % (CHECK_TYPE, REBUILD))
    return spec


def host_state(context, instance, node, cell_uuid, loaded):
    """The server's host as nova's scheduler sees it.

    :param node: the server's ``ComputeNode``
    :param cell_uuid: the UUID of the server's cell
    """
    admin = context.elevated()
    state = host_manager.HostState(host=instance.host, node=instance.node,
                                   cell_uuid=cell_uuid)
    aggregates = list(objects.AggregateList.get_by_host(admin,
                                                        instance.host))
    instances = None
    if loaded.reads_instances:
        instances = {i.uuid: i for i in _instances(admin, instance,
                                                   cell_uuid)}
    state.update(compute=node, aggregates=aggregates, inst_dict=instances)
    return state


def _instances(admin, instance, cell_uuid):
    """The instances of the server's host, from its cell's database.

    nova-api reads the server with a context targeted at its cell; only
    without one is the cell mapping read first.
    """
    cctxt = getattr(instance, '_context', None)
    if cctxt is not None and getattr(cctxt, 'db_connection', None):
        return objects.InstanceList.get_by_host(
            cctxt.elevated(), instance.host, expected_attrs=[])
    mapping = objects.CellMapping.get_by_uuid(admin, cell_uuid)
    with nova_context.target_cell(admin, mapping) as cctxt:
        return objects.InstanceList.get_by_host(cctxt, instance.host,
                                                expected_attrs=[])


def refusing_filter(context, instance, node, cell_uuid, spec, conf=CONF):
    """The name of the first enabled filter refusing the host, or None.

    :param spec: :func:`rebuild_spec`'s clone
    :raises FiltersUnavailable: the filters cannot be loaded, the host
        cannot be read, or a filter raised
    """
    loaded = load(conf)
    if not loaded.filters:
        return None
    try:
        state = host_state(context, instance, node, cell_uuid, loaded)
    except Exception as e:
        raise FiltersUnavailable('reading host %s failed: %s: %s'
                                 % (instance.host, type(e).__name__, e))
    for one in loaded.filters:
        name = type(one).__name__
        try:
            passed = loaded.handler.get_filtered_objects([one], [state],
                                                         spec)
        except Exception as e:
            raise FiltersUnavailable('%s raised %s: %s'
                                     % (name, type(e).__name__, e))
        if passed is None:
            # NOTE(nova-image-traits): nova's "stop filtering" answer, not
            # a refusal of this host.
            raise FiltersUnavailable('%s stopped the filtering' % name)
        if not passed:
            return name
    return None


def refusal(context, instance, values, image_meta, node, cell_uuid):
    """A refusing, logged decision when a filter refuses, or None.

    :param values: ``API.rebuild``'s locals at its first write
    :param node: the server's ``ComputeNode``
    :param cell_uuid: the UUID of its cell
    """
    started = time.monotonic()
    try:
        spec = rebuild_spec(values['request_spec'], image_meta,
                            values.get('flavor'))
        name = refusing_filter(context, instance, node, cell_uuid, spec)
    except FiltersUnavailable as e:
        LOG.warning('The image traits pre-check could not run the scheduler '
                    'filters for the rebuild of server %(uuid)s (%(error)s); '
                    'nova goes on and its scheduler runs them.',
                    {'uuid': instance.uuid, 'error': e})
        return None
    if name is None:
        LOG.debug('The scheduler filters accept host %(host)s for the '
                  'rebuild of server %(uuid)s.',
                  {'host': instance.host, 'uuid': instance.uuid})
        return None
    reason = filter_reason.refused(name, instance.host, instance.node)
    decision = nit_decision.Decision(
        outcome=nit_decision.REJECT, allowed=False,
        strategy=CONF.image_traits.strategy, instance_uuid=instance.uuid,
        compute_node_uuid=node.uuid, host=instance.host, cause=reason.cause,
        message=reason.message, detail=reason.detail,
        names_host=reason.names_host, elapsed=time.monotonic() - started)
    decision.log()
    return decision
