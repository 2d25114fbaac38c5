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
"""The compute node of the server being rebuilt, as nova-api finds it.

Its UUID is also its resource provider's, which every strategy asks
placement about. nova-api reads the node from the cell database once per
node and process, then remembers its UUID, as it keeps the cell mappings
it read: a compute node keeps its UUID for its lifetime (nova's stable
compute node identity). A node can still be created again under its old
name with a new UUID, and placement then knows nothing of the one
remembered, which a strategy may read as "nothing there": so the
pre-check never refuses on a remembered node. Before refusing it reads
the node again, and decides again when the UUID changed
(:func:`.decide.decide`). With ``[image_traits]
precheck_scheduler_filters`` the filters need the node itself, which is
then read for every decision.
"""

import collections
import os
import threading

from nova import context as nova_context
from nova import objects

#: The most compute nodes whose UUIDs a process remembers.
KEPT = 1024

# (host, node) -> compute node UUID. A host is in one cell (nova's host
# mappings), so its name and the node's say which compute node.
_UUIDS = collections.OrderedDict()
_LOCK = threading.Lock()


def _after_fork_in_child():
    global _LOCK
    _LOCK = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def compute_node(context, instance):
    """The compute node of ``instance`` and the UUID of its cell.

    The instance nova's API read carries a context targeted at its cell;
    otherwise the instance mapping says which cell. One database read in
    the cell (and one in the API database without a targeted context). The
    node's UUID is remembered.

    :returns: ``(ComputeNode, cell UUID)``
    """
    cctxt = getattr(instance, '_context', None)
    admin = (cctxt or context).elevated()
    if getattr(admin, 'cell_uuid', None) and admin.db_connection:
        found = (objects.ComputeNode.get_by_host_and_nodename(
            admin, instance.host, instance.node), admin.cell_uuid)
    else:
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            admin, instance.uuid)
        with nova_context.target_cell(admin, mapping.cell_mapping) as target:
            found = (objects.ComputeNode.get_by_host_and_nodename(
                target, instance.host, instance.node),
                mapping.cell_mapping.uuid)
    with _LOCK:
        _UUIDS[(instance.host, instance.node)] = found[0].uuid
        while len(_UUIDS) > KEPT:
            _UUIDS.popitem(last=False)
    return found


def remembered(instance):
    """The compute node UUID of ``instance`` already read, or None."""
    key = (instance.host, instance.node)
    with _LOCK:
        found = _UUIDS.get(key)
        if found is not None:
            _UUIDS.move_to_end(key)
        return found


def forget():
    """Read every compute node again (for tests)."""
    with _LOCK:
        _UUIDS.clear()
