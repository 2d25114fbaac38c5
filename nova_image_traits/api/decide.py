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
"""The pre-check's decision, from nova's own values, with reads sent ahead.

:class:`Ahead` starts, as soon as nova's rebuild is called, what a decision
will read whatever the new image: the compute node's UUID (one database
read, in the instance's cell) and the placement requests the configured
strategy starts with (``GET /allocations/{server}`` and the compute node's
traits). They run in worker threads while nova reads the image from
Glance, the block device mappings, the request spec and the quotas.
:func:`decide` then builds the request from the values nova's rebuild holds
at its first write, and decides; only what was not sent ahead is asked
then.
"""

import collections
import dataclasses
import os
import threading
import time

from oslo_log import log as logging

import nova.conf
from nova import context as nova_context
from nova import objects

from nova_image_traits import engine
from nova_image_traits import exception
from nova_image_traits import nova_request
from nova_image_traits import placement
from nova_image_traits.placement import prefetch
from nova_image_traits.placement import workers

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF

#: The requests each strategy starts with, whatever the image asks.
_FIRST_REQUESTS = {
    'held_providers': ('allocations', 'node_traits'),
    'allocation_traits': ('allocations',),
    'in_tree_candidates': ('allocations',),
    'root_traits': ('node_traits',),
    'tree_traits': ('node_traits',),
}


#: The most compute nodes whose UUIDs a process remembers.
NODES_KEPT = 1024

# (host, node) -> compute node UUID. A host is in one cell (nova's host
# mappings), so its name and the node's say which compute node.
_NODES = collections.OrderedDict()
_NODES_LOCK = threading.Lock()


def _after_fork_in_child():
    global _NODES_LOCK
    _NODES_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def compute_node_uuid(context, instance):
    """The UUID of the compute node (and resource provider) of ``instance``.

    Read once per node and process, then remembered, as nova-api keeps the
    cell mappings it read: a compute node keeps its UUID for its lifetime
    (nova's stable compute node identity). A node created again under the
    same name with a new UUID leaves placement answering 404 for the old
    one: that decision fails, the conductor decides, and the wrapper calls
    :func:`forget_node`.

    The instance nova's API read carries a context targeted at its cell;
    otherwise the instance mapping says which cell.
    """
    found = remembered_node(instance)
    if found is not None:
        return found
    cctxt = getattr(instance, '_context', None)
    admin = (cctxt or context).elevated()
    if getattr(admin, 'cell_uuid', None) and admin.db_connection:
        uuid = objects.ComputeNode.get_by_host_and_nodename(
            admin, instance.host, instance.node).uuid
    else:
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            admin, instance.uuid)
        with nova_context.target_cell(admin, mapping.cell_mapping) as target:
            uuid = objects.ComputeNode.get_by_host_and_nodename(
                target, instance.host, instance.node).uuid
    with _NODES_LOCK:
        _NODES[(instance.host, instance.node)] = uuid
        while len(_NODES) > NODES_KEPT:
            _NODES.popitem(last=False)
    return uuid


def remembered_node(instance):
    """The compute node UUID of ``instance`` already read, or None."""
    key = (instance.host, instance.node)
    with _NODES_LOCK:
        found = _NODES.get(key)
        if found is not None:
            _NODES.move_to_end(key)
        return found


def forget_node(instance=None):
    """Read the compute node of ``instance`` (or every one) again."""
    with _NODES_LOCK:
        if instance is None:
            _NODES.clear()
        else:
            _NODES.pop((instance.host, instance.node), None)


class Ahead:
    """What a decision about ``instance`` reads, started now.

    Nothing here raises: whatever fails is asked again, or fails, when the
    decision asks for it.
    """

    def __init__(self, context, instance):
        self.client = None
        self._node = None
        self._uuid = None
        try:
            opts = CONF.image_traits
            base = placement.get_client(CONF, opts.decision_timeout)
            self.client = prefetch.PrefetchingClient(base)
            first = _FIRST_REQUESTS.get(opts.strategy, ())
            timeout = opts.decision_timeout
            grid = getattr(context, 'global_id', None)
            if 'allocations' in first:
                self.client.prefetch(
                    '/allocations/%s' % placement.quote(instance.uuid),
                    '1.0', timeout, grid)

            def traits(uuid):
                if 'node_traits' in first:
                    self.client.prefetch(
                        '/resource_providers/%s/traits'
                        % placement.quote(uuid), '1.6', timeout, grid)
                return uuid

            self._uuid = remembered_node(instance)
            if self._uuid is not None:
                traits(self._uuid)
            else:
                self._node = prefetch.run_ahead(
                    lambda: traits(compute_node_uuid(context, instance)))
        except Exception as e:
            LOG.debug('Nothing of the pre-check of %(uuid)s sent ahead: '
                      '%(error)s', {'uuid': instance.uuid, 'error': e})

    def begin(self):
        """The decision begins: what it waits for from now counts."""
        if self.client is not None:
            self.client.begin(CONF.image_traits.decision_timeout)

    def node_uuid(self, context, instance):
        """The compute node's UUID, within the decision's timeout."""
        if self._uuid is not None:
            return self._uuid
        if self._node is not None:
            wait = CONF.image_traits.decision_timeout
            if self.client is not None and self.client.deadline is not None:
                wait = self.client.deadline - time.monotonic()
            try:
                return self._node.result(wait)
            except workers.Abandoned:
                raise exception.DecisionDeadlineExceeded(
                    limit=CONF.image_traits.decision_timeout,
                    waiting="waiting for nova's database to name the "
                            'compute node')
        return compute_node_uuid(context, instance)


def decide(context, instance, values, ahead):
    """Decide the rebuild nova's ``API.rebuild`` is about to write.

    :param values: ``API.rebuild``'s locals at its first write
        (:data:`.compat.LOCALS`)
    :param ahead: the :class:`Ahead` started for this rebuild, or None
    :returns: a :class:`~nova_image_traits.decision.Decision`, or None
        when there is nothing to decide
    """
    image_href = values['image_href']
    orig_image_ref = values['orig_image_ref']
    if orig_image_ref == image_href:
        return None  # the same image: nova checks nothing, nor do we
    if not instance.host:
        return None  # never launched: nova answers
    image_meta = objects.ImageMeta.from_dict(values['image'])
    if not (nova_request.image_properties_from_image_meta(image_meta) or
            nova_request.judges_derived(CONF) or
            CONF.scheduler.enable_isolated_aggregate_filtering):
        return None
    # NOTE(nova-image-traits): at the first write nova has changed the
    # instance's fields, not yet its system metadata.
    request = nova_request.rebuild_request(
        context, values['request_spec'], image_meta, None, instance.host,
        flavor=values['flavor'],
        orig_sys_metadata=dict(instance.system_metadata),
        orig_image_ref=orig_image_ref,
        is_volume_backed=values['is_volume_backed'], conf=CONF)
    if not request.judged():
        return None
    if ahead is None:
        ahead = Ahead(context, instance)
    ahead.begin()
    request = dataclasses.replace(
        request, compute_node_uuid=ahead.node_uuid(context, instance))
    return engine.decide(request, conf=CONF, client=ahead.client)
