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
"""Populate a placement service over its HTTP API.

:class:`CloudBuilder` creates providers, trees, inventories, traits,
aggregates and allocations through the public API only, so it works against
:class:`nova_image_traits.simulate.server.PlacementServer` or any other
placement that accepts a token.
"""

import dataclasses
import uuid as uuid_lib

from oslo_log import log as logging

from nova_image_traits.simulate import http

LOG = logging.getLogger(__name__)

SHARES_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'
FILLER_PROJECT = 'filler-project'
FILLER_USER = 'filler-user'


@dataclasses.dataclass
class ComputeNode:
    """A root provider and its nested children.

    :param uuid: the root provider's UUID
    :param children: child provider UUIDs keyed by child name
    """

    uuid: str
    children: dict = dataclasses.field(default_factory=dict)


def inventory_record(value):
    """Normalise an inventory value to placement's inventory dict.

    :param value: an integer total, or a dict of inventory fields
    """
    return dict(value) if isinstance(value, dict) else {'total': int(value)}


class CloudBuilder(http.PlacementHTTP):
    """Build a simulated cloud in placement.

    Takes the arguments of :class:`~.http.PlacementHTTP`.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._created = set()

    # -- traits and resource classes ---------------------------------------

    def ensure_custom(self, collection, names):
        """Create the custom traits or resource classes among ``names``.

        Standard ones already exist; unknown standard names are left for
        placement to reject when they are used.

        :param collection: ``'traits'`` or ``'resource_classes'``
        :param names: trait or resource class names
        """
        for name in names:
            path = '/%s/%s' % (collection, name)
            if name.startswith('CUSTOM_') and path not in self._created:
                self.request('PUT', path, expect=(201, 204))
                self._created.add(path)

    def ensure_traits(self, names):
        """Create the custom traits among ``names``."""
        self.ensure_custom('traits', names)

    # -- providers ----------------------------------------------------------

    def create_provider(self, name, uuid=None, parent_uuid=None):
        """Create a resource provider.

        :param name: provider name (unique in placement)
        :param uuid: provider UUID; generated when None
        :param parent_uuid: parent provider UUID for a nested provider
        :returns: the provider UUID
        """
        body = {'name': name, 'uuid': uuid or str(uuid_lib.uuid4())}
        if parent_uuid:
            body['parent_provider_uuid'] = parent_uuid
        return self.request('POST', '/resource_providers', body)['uuid']

    def _replace(self, rp_uuid, what, generation, **body):
        """PUT a provider's ``what`` (inventories, traits) at a generation.

        :param generation: the provider's generation; read when None
        :returns: the provider's new generation
        """
        if generation is None:
            generation = self.get(
                '/resource_providers/%s' % rp_uuid)['generation']
        body['resource_provider_generation'] = generation
        return self.request('PUT', '/resource_providers/%s/%s' % (
            rp_uuid, what), body)['resource_provider_generation']

    def set_inventory(self, rp_uuid, inventories, generation=None):
        """Replace all inventories of a provider.

        :param rp_uuid: provider UUID
        :param inventories: ``{rc: total}`` or ``{rc: {"total": ...,
            "reserved": ..., "max_unit": ..., "allocation_ratio": ...}}``
        :param generation: the provider's generation if known
        :returns: the provider's new generation
        """
        self.ensure_custom('resource_classes', inventories)
        return self._replace(rp_uuid, 'inventories', generation, inventories={
            rc: inventory_record(value) for rc, value in inventories.items()})

    def set_traits(self, rp_uuid, traits, generation=None):
        """Replace the traits of a provider.

        :param rp_uuid: provider UUID
        :param traits: trait names; custom ones are created first
        :param generation: the provider's generation if known
        :returns: the provider's new generation
        """
        traits = sorted(set(traits))
        self.ensure_traits(traits)
        return self._replace(rp_uuid, 'traits', generation, traits=traits)

    def add_to_aggregate(self, rp_uuid, agg_uuid):
        """Add a provider to an aggregate, keeping its other aggregates.

        :param rp_uuid: provider UUID
        :param agg_uuid: aggregate UUID
        :returns: the provider's new generation
        """
        path = '/resource_providers/%s/aggregates' % rp_uuid
        current = self.get(path)
        body = {
            'aggregates': sorted(set(current['aggregates']) | {agg_uuid}),
            'resource_provider_generation':
                current['resource_provider_generation'],
        }
        return self.request('PUT', path, body)['resource_provider_generation']

    def make_sharing_provider(self, name, agg_uuid, inventory, traits=()):
        """Create a provider sharing its inventory through an aggregate.

        Compute nodes see it once they join ``agg_uuid`` too
        (:meth:`add_to_aggregate`).

        :param name: provider name
        :param agg_uuid: aggregate UUID
        :param inventory: as for :meth:`set_inventory`
        :param traits: extra traits; ``MISC_SHARES_VIA_AGGREGATE`` is added
        :returns: the provider UUID
        """
        rp_uuid = self.create_provider(name)
        self._populate(rp_uuid, inventory, set(traits) | {SHARES_TRAIT})
        self.add_to_aggregate(rp_uuid, agg_uuid)
        return rp_uuid

    def _populate(self, rp_uuid, inventory, traits):
        """Give a freshly created provider its inventory and traits.

        :param rp_uuid: provider UUID, still at generation 0
        :param inventory: as for :meth:`set_inventory`, may be empty
        :param traits: trait names, may be empty
        """
        gen = 0
        if inventory:
            gen = self.set_inventory(rp_uuid, inventory, generation=gen)
        if traits:
            self.set_traits(rp_uuid, traits, generation=gen)

    def create_compute_node(self, name, vcpus=8, memory_mb=16384,
                            disk_gb=100, traits=(), children=()):
        """Create a compute node root provider and nested children.

        :param name: root provider name
        :param vcpus: VCPU total (0 for none)
        :param memory_mb: MEMORY_MB total (0 for none)
        :param disk_gb: DISK_GB total (0 for none)
        :param traits: root provider traits
        :param children: dicts with ``name`` and optional ``inventory``,
            ``traits`` and ``parent`` (name of an earlier child; default
            the root), created in order
        :returns: a :class:`ComputeNode`
        """
        totals = {'VCPU': vcpus, 'MEMORY_MB': memory_mb, 'DISK_GB': disk_gb}
        root = self.create_provider(name)
        self._populate(root, {rc: n for rc, n in totals.items() if n},
                       traits)
        node = ComputeNode(uuid=root)
        for child in children:
            parent = node.children[child['parent']] if child.get(
                'parent') else root
            rp_uuid = self.create_provider(child['name'], parent_uuid=parent)
            self._populate(rp_uuid, child.get('inventory') or {},
                           child.get('traits') or ())
            node.children[child['name']] = rp_uuid
        return node

    # -- allocations ------------------------------------------------------

    def allocate(self, consumer_uuid, allocations, project_id, user_id):
        """Replace a consumer's allocations.

        :param consumer_uuid: consumer UUID
        :param allocations: ``{rp_uuid: {rc: amount}}``
        :param project_id: project owning the consumer
        :param user_id: user owning the consumer
        """
        path = '/allocations/%s' % consumer_uuid
        current = self.get(path)
        body = {
            'allocations': {rp: {'resources': dict(resources)}
                            for rp, resources in allocations.items()},
            'project_id': project_id,
            'user_id': user_id,
            'consumer_generation': current.get('consumer_generation'),
        }
        if self.microversion >= (1, 38):
            body['consumer_type'] = 'INSTANCE'
        self.request('PUT', path, body, expect=(204,))

    def fill(self, rp_uuid, rc):
        """Consume all remaining capacity of ``rc`` on a provider.

        Uses as many filler consumers as ``max_unit`` requires.

        :param rp_uuid: provider UUID
        :param rc: resource class name
        :returns: UUIDs of the filler consumers created
        """
        record = self.get('/resource_providers/%s/inventories/%s' %
                          (rp_uuid, rc))
        used = self.get('/resource_providers/%s/usages' %
                        rp_uuid)['usages'].get(rc, 0)
        free = int((record['total'] - record['reserved']) *
                   record['allocation_ratio']) - used
        step = record['step_size']
        chunk = record['max_unit'] - record['max_unit'] % step
        consumers = []
        while free >= max(step, record['min_unit']):
            amount = min(chunk, free - free % step)
            consumer = str(uuid_lib.uuid4())
            self.allocate(consumer, {rp_uuid: {rc: amount}},
                          FILLER_PROJECT, FILLER_USER)
            consumers.append(consumer)
            free -= amount
        LOG.debug('Filled %s of %s with %d consumers', rc, rp_uuid,
                  len(consumers))
        return consumers
