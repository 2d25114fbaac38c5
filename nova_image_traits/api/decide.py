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
will read whatever the new image: the compute node (one database read,
in the instance's cell, once per node and process: :mod:`.nodes`) and
the placement requests the configured strategy starts with
(``GET /allocations/{server}`` and the compute node's traits, unless the
allocations give the node the generation of traits placement gave this
process before: :mod:`~nova_image_traits.placement.known_traits`). They run
in worker threads while nova reads the image from Glance, the block
device mappings, the request spec and the quotas.
:func:`decide` then builds the request from the values nova's rebuild holds
at its first write, and decides; only what was not sent ahead is asked
then. With ``[image_traits] precheck_scheduler_filters``, nova's rebuild
scheduler filters run first, for the server's own host
(:mod:`.host_filters`).

A rebuild with the server's own image (nova's ``orig_image_ref ==
image_href``) is decided only with ``[image_traits]
judge_same_image_rebuild`` and when the image's properties changed since
the server recorded them (:mod:`.same_image`): then as a rebuild to a new
image whose current image is what the system metadata recorded.
"""

import dataclasses
import time

from oslo_log import log as logging

import nova.conf
from nova import objects

from nova_image_traits.api import nodes
from nova_image_traits.api import same_image
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


class Ahead:
    """What a decision about ``instance`` reads, started now.

    Nothing here raises: whatever fails is asked again, or fails, when the
    decision asks for it.
    """

    def __init__(self, context, instance):
        self.client = None
        self._node = None
        #: The compute node UUID remembered (not read) for this decision.
        self.remembered = None
        try:
            opts = CONF.image_traits
            base = placement.get_client(CONF, opts.decision_timeout)
            self.client = prefetch.PrefetchingClient(base)
            first = _FIRST_REQUESTS.get(opts.strategy, ())
            timeout = opts.decision_timeout
            grid = getattr(context, 'global_id', None)
            allocations = None
            if 'allocations' in first:
                allocations = '/allocations/%s' % placement.quote(
                    instance.uuid)
                self.client.prefetch(allocations, '1.0', timeout, grid)

            def traits(uuid):
                # NOTE(nova-image-traits): not sent when the allocations
                # give the node the generation of traits placement gave
                # before (placement.known_traits).
                if 'node_traits' in first:
                    self.client.prefetch_traits(uuid, timeout, grid,
                                                allocations=allocations)

            def node():
                found = nodes.compute_node(context, instance)
                traits(found[0].uuid)
                return found

            self.remembered = (None if opts.precheck_scheduler_filters
                               else nodes.remembered(instance))
            if self.remembered is not None:
                traits(self.remembered)
            else:
                self._node = prefetch.run_ahead(node)
        except Exception as e:
            LOG.debug('Nothing of the pre-check of %(uuid)s sent ahead: '
                      '%(error)s', {'uuid': instance.uuid, 'error': e})

    def begin(self):
        """The decision begins, once: what it waits for from now counts."""
        if self.client is not None and self.client.deadline is None:
            self.client.begin(CONF.image_traits.decision_timeout)

    def node(self, context, instance):
        """``(ComputeNode, cell UUID)``, within the decision's timeout."""
        if self._node is None:
            return nodes.compute_node(context, instance)
        wait = CONF.image_traits.decision_timeout
        if self.client is not None and self.client.deadline is not None:
            wait = self.client.deadline - time.monotonic()
        try:
            return self._node.result(wait)
        except workers.Abandoned:
            raise exception.DecisionDeadlineExceeded(
                limit=CONF.image_traits.decision_timeout,
                waiting="waiting for nova's database to name the compute "
                        'node')

    def node_uuid(self, context, instance):
        """The compute node's UUID: remembered, or :meth:`node`'s."""
        if self.remembered is not None:
            return self.remembered
        return self.node(context, instance)[0].uuid


def _same_image_changed(context, instance, values):
    """Whether a rebuild with the server's own image is judged.

    ``orig_image_ref`` is nova's own answer to "the same image": the
    server's ``image_ref``, or its root volume's image for a volume-backed
    server. Only with ``[image_traits] judge_same_image_rebuild``, and only
    when the image's properties changed since the server recorded them.
    """
    if not CONF.image_traits.judge_same_image_rebuild:
        return False
    # NOTE(nova-image-traits): at nova's first write the system metadata is
    # still the one the server had: nova rewrites it afterwards
    # (API.rebuild's _reset_image_metadata, nova 31 to 34). It may describe
    # another image: one a refused rebuild left behind, which this rebuild
    # replaces. What the server recorded of its own is then unknown, and
    # nothing is judged, as nova judges nothing.
    recorded = dict(instance.system_metadata)
    if not (values['is_volume_backed'] and recorded.get(
            nova_request.SM_BASE_IMAGE_REF) in ('', instance.image_ref)):
        # NOTE(nova-image-traits): a volume-backed server booted from its
        # volume records the base image as nova-api created it (empty, or
        # its imageRef), until its first reimage.
        recorded = nova_request.trusted_system_metadata(
            context, recorded, values['orig_image_ref'])
    if recorded is None:
        LOG.info('Rebuild of server %(uuid)s with its own image %(image)s: '
                 'its system metadata describes another image, so what '
                 'changed is unknown; not judged.',
                 {'uuid': instance.uuid, 'image': values['image_href']})
        return False
    if not same_image.changed(recorded, values['image'], values['flavor']):
        LOG.debug('Rebuild of server %(uuid)s with its own image '
                  '%(image)s, unchanged: not judged.',
                  {'uuid': instance.uuid, 'image': values['image_href']})
        return False
    LOG.info('Rebuild of server %(uuid)s with its own image %(image)s, '
             'whose properties changed since the server recorded them: '
             'judged as a new image.',
             {'uuid': instance.uuid, 'image': values['image_href']})
    return True


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
    if not instance.host:
        return None  # never launched: nova answers
    if orig_image_ref == image_href and not _same_image_changed(
            context, instance, values):
        return None  # the same image, as the server recorded it
    image_meta = objects.ImageMeta.from_dict(values['image'])
    if (CONF.image_traits.precheck_scheduler_filters and
            orig_image_ref != image_href):
        # NOTE(nova-image-traits): nova runs its rebuild filters for a new
        # image only; a same-image rebuild is judged on what changed.
        if ahead is None:
            ahead = Ahead(context, instance)
        ahead.begin()
        refused = _filters_refusal(context, instance, values, image_meta,
                                   ahead)
        if refused is not None:
            return refused
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
    remembered = ahead.remembered
    decision = engine.decide(dataclasses.replace(
        request, compute_node_uuid=ahead.node_uuid(context, instance)),
        conf=CONF, client=ahead.client)
    if decision.allowed or remembered is None:
        return decision
    # NOTE(nova-image-traits): never refuse on a remembered node: one
    # created again under its name has a new UUID (:mod:`.nodes`).
    current = nodes.compute_node(context, instance)[0].uuid
    if current == remembered:
        return decision
    LOG.info('Compute node %(node)s of server %(uuid)s is now %(current)s; '
             'deciding again.', {'node': remembered, 'uuid': instance.uuid,
                                 'current': current})
    return engine.decide(dataclasses.replace(
        request, compute_node_uuid=current), conf=CONF, client=ahead.client)


def _filters_refusal(context, instance, values, image_meta, ahead):
    try:
        from nova_image_traits.api import host_filters
    except ImportError as e:
        LOG.warning('The image traits pre-check cannot run the scheduler '
                    'filters here (%s); nova goes on and its scheduler runs '
                    'them.', e)
        return None
    node, cell_uuid = ahead.node(context, instance)
    return host_filters.refusal(context, instance, values, image_meta, node,
                                cell_uuid)
