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
"""Build a :class:`~nova_image_traits.request.RebuildRequest` from nova.

This is the thin layer between nova's objects and the decision engine,
which knows nothing of nova. The scheduler filter (which sees a
``RequestSpec`` and a ``HostState``), the conductor hook and the API
pre-check (which also see the instance and the system metadata of the
*original* image) all build their request with :func:`rebuild_request`.

Only image traits are passed on: nova's ``ImageMetaProps`` keeps just the
``trait:<NAME>=required`` properties (as ``traits_required``) and ignores
every other ``trait:`` value, so we do the same.
"""

import re
import urllib.parse

from nova.scheduler import utils as scheduler_utils
from nova import utils as nova_utils
from oslo_log import log as logging

from nova_image_traits import flavor as nit_flavor
from nova_image_traits import request as nit_request
from nova_image_traits.traits import REQUIRED
from nova_image_traits.traits import TRAIT_PREFIX

LOG = logging.getLogger(__name__)

#: The system metadata key naming the image the ``image_*`` keys describe.
SM_BASE_IMAGE_REF = nova_utils.SM_IMAGE_PROP_PREFIX + 'base_image_ref'

# A per-group parameter of GET /allocation_candidates and its suffix.
_GROUP_PARAM = re.compile(r'^(resources|required|member_of)(.*)$')


def resource_query_from_request_spec(spec_obj):
    """Return the :class:`~nova_image_traits.flavor.ResourceQuery` of a boot.

    It is built by nova's own ``ResourceRequest.from_request_spec``, the
    code the scheduler runs at boot (flavor, extra specs, CPU policies,
    memory encryption, vTPM, vPMEM, secure boot and the other image
    properties nova translates), and read back from its
    ``to_querystring()``, the public form of that request. It lacks what
    nova does not keep in the request spec or adds only when it schedules:
    the groups of ports, accelerators and PCI devices
    (``requested_resources`` is not persisted, and the conductor fills it
    again only for an evacuation) and what request filters add
    (``member_of``, ``COMPUTE_STATUS_DISABLED``). For a rebuild that is
    what matters: those groups ask for other resource classes than the
    unsuffixed group, and the server is not being placed anew. The new image's
    ``trait:<NAME>=required`` traits are left out: the strategies add them
    where nova does, to the unsuffixed group, and can also ask without
    them. ``in_tree`` and ``limit`` are the strategies' to set.

    :param spec_obj: the ``nova.objects.RequestSpec`` of the rebuild, whose
        image is already the new one
    :returns: a ResourceQuery, or None when nova cannot build the request
        (the strategies then use the flavor alone)
    """
    try:
        spec = spec_obj.obj_clone()
        if 'image' in spec and spec.image and 'properties' in spec.image:
            spec.image.properties.traits_required = []
        res_req = scheduler_utils.ResourceRequest.from_request_spec(
            spec, enable_pinning_translate=True)
        querystring = res_req.to_querystring()
    except Exception as e:
        LOG.warning('Cannot build the placement request of instance '
                    '%(instance)s with nova\'s ResourceRequest (%(error)s); '
                    'judging its flavor alone.',
                    {'instance': getattr(spec_obj, 'instance_uuid', None),
                     'error': '%s: %s' % (type(e).__name__, e)})
        return None
    return resource_query_from_querystring(querystring)


def _traits(values):
    """The required and the forbidden trait names in ``required`` values."""
    names = [name for value in values for name in value.split(',') if name]
    return (frozenset(n for n in names if not n.startswith('!')),
            frozenset(n[1:] for n in names if n.startswith('!')))


def resource_query_from_querystring(querystring):
    """Parse a ``GET /allocation_candidates`` query string into a query.

    :param querystring: what ``ResourceRequest.to_querystring()`` returns
    :returns: a :class:`~nova_image_traits.flavor.ResourceQuery` with
        ``source='nova'``
    """
    params = urllib.parse.parse_qs(querystring)
    # NOTE(founders): in_tree and limit are the strategies' to set.
    suffixes = {''} | {match.group(2)
                       for match in map(_GROUP_PARAM.match, params) if match}
    groups = []
    for sfx in sorted(suffixes):
        amounts = [item.partition(':')
                   for value in params.get('resources' + sfx, ())
                   for item in value.split(',') if item]
        required, forbidden = _traits(params.get('required' + sfx, ()))
        groups.append(nit_flavor.RequestGroup(
            sfx, {rc: int(amount) for rc, _sep, amount in amounts},
            required, forbidden, tuple(params.get('member_of' + sfx, ()))))
    root_required, root_forbidden = _traits(params.get('root_required', ()))
    return nit_flavor.ResourceQuery(
        groups=tuple(groups),
        group_policy=params.get('group_policy', [None])[-1],
        same_subtree=tuple(tuple(value.split(','))
                           for value in params.get('same_subtree', ())),
        root_required=root_required, root_forbidden=root_forbidden,
        source='nova')


def image_properties_from_image_meta(image_meta):
    """Return the flat Glance-style trait properties of an ``ImageMeta``.

    ``ImageMeta`` only keeps the names of required traits
    (``properties.traits_required``); this rebuilds the
    ``trait:<NAME>=required`` properties they came from.

    :param image_meta: a ``nova.objects.ImageMeta`` or None
    :returns: a dict such as ``{'trait:HW_CPU_X86_AVX2': 'required'}``
    """
    if image_meta is None or 'properties' not in image_meta:
        return {}
    return {TRAIT_PREFIX + name: REQUIRED
            for name in image_meta.properties.get('traits_required') or ()}


def image_properties_from_system_metadata(system_metadata, image_ref=None):
    """Return the trait properties of the image recorded in system metadata.

    Nova copies every image property ``<key>`` into the instance's system
    metadata as ``image_<key>``
    (``nova.utils.get_system_metadata_from_image``), so a required trait
    ``trait:<NAME>=required`` is stored under the key
    ``image_trait:<NAME>``, next to ``image_base_image_ref``, the id of the
    image they describe. The conductor receives the system metadata of the
    image being replaced as ``orig_sys_metadata``.

    :param system_metadata: a dict of system metadata, or None
    :param image_ref: the id of the image the instance runs; when given,
        system metadata that describes another image is not trusted
    :returns: a dict of ``trait:<NAME>: required`` properties, or None when
        the image's properties are unknown
    """
    if system_metadata is None:
        return None
    system_metadata = dict(system_metadata)
    described = system_metadata.get(SM_BASE_IMAGE_REF)
    if image_ref is not None and described != image_ref:
        # NOTE(founders): a refused rebuild leaves the *refused* image's
        # properties in system metadata: nova's API writes them before the
        # conductor checks, and the conductor only rolls image_ref back.
        # Trusting them would accept a retry of the refused rebuild.
        LOG.info('The system metadata describes image %(described)s, not '
                 'the current image %(current)s; its image properties are '
                 'treated as unknown.',
                 {'described': described, 'current': image_ref})
        return None
    image = nova_utils.get_image_from_system_metadata(system_metadata)
    # NOTE(founders): filter exactly the way
    # ImageMetaProps._set_attr_from_trait_names does, so the original and the
    # new image are read alike, but without ImageMeta.from_dict: it validates
    # every other property too, and a value an older nova accepted must not
    # stop the rebuild.
    return {str(key): REQUIRED
            for key, value in image.get('properties', {}).items()
            if str(key).startswith(TRAIT_PREFIX) and str(value) == REQUIRED}


def flavor_from_nova(flavor):
    """Return a :class:`~nova_image_traits.flavor.Flavor` for a nova flavor.

    :param flavor: a ``nova.objects.Flavor``
    """
    extra_specs = flavor.extra_specs if 'extra_specs' in flavor else None
    return nit_flavor.Flavor(
        vcpus=flavor.vcpus, memory_mb=flavor.memory_mb,
        root_gb=flavor.root_gb, ephemeral_gb=flavor.ephemeral_gb,
        swap=flavor.swap, extra_specs=dict(extra_specs or {}),
        name=flavor.name if 'name' in flavor else None)


def rebuild_request(context, spec, image_meta, compute_node_uuid, host,
                    flavor=None, orig_sys_metadata=None, orig_image_ref=None,
                    is_volume_backed=None):
    """Build the request the filter, the hook or the pre-check asks about.

    :param context: the request context; its ``global_id`` is sent to
        placement
    :param spec: the rebuild's ``nova.objects.RequestSpec``, whose image is
        the new one (nova's API sets it before it casts to the conductor)
    :param image_meta: the ``nova.objects.ImageMeta`` of the new image
    :param compute_node_uuid: the compute node the server is on, which is
        also its resource provider
    :param host: the server's host
    :param flavor: the server's ``nova.objects.Flavor``; by default the
        request spec's
    :param orig_sys_metadata: the system metadata the instance had before
        the API switched it to the new image (as the conductor's
        ``rebuild_instance`` receives it), or None when unknown (the
        scheduler filter: by then the API has replaced it)
    :param orig_image_ref: the id of the image being replaced, to check
        that ``orig_sys_metadata`` describes it
    :param is_volume_backed: whether the root disk is a volume; by default
        the request spec's ``is_bfv``, False when it is not set
    :returns: a :class:`~nova_image_traits.request.RebuildRequest`
    """
    if is_volume_backed is None:
        is_volume_backed = 'is_bfv' in spec and bool(spec.is_bfv)
    return nit_request.RebuildRequest(
        instance_uuid=spec.instance_uuid,
        compute_node_uuid=compute_node_uuid,
        image_properties=image_properties_from_image_meta(image_meta),
        flavor=flavor_from_nova(flavor or spec.flavor),
        original_image_properties=image_properties_from_system_metadata(
            orig_sys_metadata, image_ref=orig_image_ref),
        is_volume_backed=bool(is_volume_backed),
        resources=resource_query_from_request_spec(spec),
        host=host, global_request_id=getattr(context, 'global_id', None))
