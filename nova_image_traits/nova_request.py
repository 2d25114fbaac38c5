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

The image's ``trait:`` properties are passed on as nova reads them: its
``ImageMetaProps`` keeps just the ``trait:<NAME>=required`` properties (as
``traits_required``) and ignores every other ``trait:`` value, so we do
the same. What nova derives from the image's other properties comes from
:mod:`nova_image_traits.boot_requirements`.
"""

import nova.conf
from nova.image import glance
from nova import objects
from nova import utils as nova_utils
from oslo_log import log as logging

from nova_image_traits import boot_requirements
from nova_image_traits import conf as nit_conf
from nova_image_traits import flavor as nit_flavor
from nova_image_traits import request as nit_request
from nova_image_traits.traits import REQUIRED
from nova_image_traits.traits import TRAIT_PREFIX

LOG = logging.getLogger(__name__)

#: The system metadata key naming the image the ``image_*`` keys describe.
SM_BASE_IMAGE_REF = nova_utils.SM_IMAGE_PROP_PREFIX + 'base_image_ref'


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


def image_properties_from_system_metadata(system_metadata):
    """Return the trait properties of the image recorded in system metadata.

    Nova copies every image property ``<key>`` into the instance's system
    metadata as ``image_<key>``
    (``nova.utils.get_system_metadata_from_image``), so a required trait
    ``trait:<NAME>=required`` is stored under the key
    ``image_trait:<NAME>``, next to ``image_base_image_ref``, the id of the
    image they describe (see :func:`trusted_system_metadata`). The
    conductor receives the system metadata of the image being replaced as
    ``orig_sys_metadata``.

    :param system_metadata: a dict of system metadata, or None
    :returns: a dict of ``trait:<NAME>: required`` properties, or None when
        the image's properties are unknown
    """
    if system_metadata is None:
        return None
    system_metadata = dict(system_metadata)
    image = nova_utils.get_image_from_system_metadata(system_metadata)
    # NOTE(founders): filter exactly the way
    # ImageMetaProps._set_attr_from_trait_names does, so the original and the
    # new image are read alike, but without ImageMeta.from_dict: it validates
    # every other property too, and a value an older nova accepted must not
    # stop the rebuild.
    return {str(key): REQUIRED
            for key, value in image.get('properties', {}).items()
            if str(key).startswith(TRAIT_PREFIX) and str(value) == REQUIRED}


def trusted_system_metadata(context, system_metadata, image_ref,
                            ask_glance=True):
    """Return ``system_metadata`` if it describes ``image_ref``, else None.

    It describes the image when its ``image_base_image_ref`` names it. It
    names another image in two cases:

    * a refused rebuild left the refused image's properties behind
      (nova's API writes them before the conductor checks, and nova's
      handler of a refusal rolls only ``image_ref`` back); trusting them
      would accept a retry of the refused rebuild;
    * the server was booted from a snapshot: a snapshot inherits every
      ``image_*`` key of its server as a property, ``base_image_ref`` (its
      ancestor) included, and nova keeps that one at boot
      (``API._populate_instance_for_create`` only sets it when missing).

    With ``ask_glance``, the image is read from Glance to tell them apart:
    the system metadata is trusted when the image's own ``base_image_ref``
    property names the same ancestor, which is what booting it recorded.
    One request, made only when the two ids differ.

    :param context: the request context, to read the image from Glance
    :param system_metadata: a dict of system metadata, or None
    :param image_ref: the id of the image the instance runs, or None to
        trust the system metadata as it is
    :param ask_glance: whether Glance may be asked
    """
    if system_metadata is None or image_ref is None:
        return system_metadata
    described = dict(system_metadata).get(SM_BASE_IMAGE_REF)
    if described == image_ref:
        return system_metadata
    ancestor = _ancestor(context, image_ref) if ask_glance else None
    if ancestor is not None and ancestor == described:
        return system_metadata
    LOG.info('The system metadata describes image %(described)s, not the '
             'current image %(current)s (whose base image is %(ancestor)s); '
             'its image properties are treated as unknown.',
             {'described': described, 'current': image_ref,
              'ancestor': ancestor or 'unknown'})
    return None


def _ancestor(context, image_ref):
    """The ``base_image_ref`` property of image ``image_ref``, or None."""
    try:
        image = glance.API().get(context, image_ref)
    except Exception as e:
        # NOTE(founders): deleted, not visible to this user, or Glance down:
        # the current image stays unknown, which only makes reject stricter.
        LOG.info('Cannot read image %(image)s from Glance: %(error)s',
                 {'image': image_ref, 'error': e})
        return None
    return (image.get('properties') or {}).get('base_image_ref')


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


def judges_derived(conf=None):
    """Whether ``[image_traits] judge_derived_requirements`` is on."""
    conf = nova.conf.CONF if conf is None else conf
    if 'image_traits' not in conf:
        nit_conf.register_opts(conf)
    return conf.image_traits.judge_derived_requirements


def _volume_backed(spec, is_volume_backed):
    if is_volume_backed is None:
        return 'is_bfv' in spec and bool(spec.is_bfv)
    return bool(is_volume_backed)


def original_image_meta(orig_sys_metadata, orig_image_ref):
    """The ``ImageMeta`` of the image being replaced, or None.

    :param orig_sys_metadata: its system metadata, once
        :func:`trusted_system_metadata` trusts it, or None
    :param orig_image_ref: its id, for the log

    None when it is unknown, or when nova no longer accepts a value an
    older nova stored.
    """
    if image_properties_from_system_metadata(orig_sys_metadata) is None:
        return None
    image = nova_utils.get_image_from_system_metadata(
        dict(orig_sys_metadata))
    try:
        return objects.ImageMeta.from_dict(image)
    except Exception as e:
        LOG.info('The current image %(image)s has properties nova no longer '
                 'accepts (%(error)s); what it asked at boot is treated as '
                 'unknown.', {'image': orig_image_ref, 'error': e})
        return None


def _reads_original(conf):
    """Whether a configured strategy reads the current image's asks.

    Only ``reject`` does; deriving them costs two more asks of nova.
    """
    opts = (nova.conf.CONF if conf is None else conf).image_traits
    return 'reject' in (opts.strategy, opts.fallback_strategy)


def _once(func):
    """``func``, called the first time only; later calls reuse its result."""
    results = []

    def call():
        if not results:
            results.append(func())
        return results[0]
    return call


def rebuild_request(context, spec, image_meta, compute_node_uuid, host,
                    flavor=None, orig_sys_metadata=None, orig_image_ref=None,
                    is_volume_backed=None, conf=None):
    """Build the request the filter, the hook or the pre-check asks about.

    :param context: the request context; its ``global_id`` is sent to
        placement
    :param spec: the rebuild's ``nova.objects.RequestSpec``
    :param image_meta: the ``nova.objects.ImageMeta`` of the new image
    :param compute_node_uuid: the compute node the server is on, which is
        also its resource provider; None to look it up only once the
        request :meth:`~nova_image_traits.request.RebuildRequest.asks`
        anything (then ``dataclasses.replace`` it)
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
    :param conf: the ConfigOpts holding ``[image_traits]``; nova's by
        default
    :returns: a :class:`~nova_image_traits.request.RebuildRequest`, with
        the aggregates isolation forbids a boot of the new image
    """
    is_volume_backed = _volume_backed(spec, is_volume_backed)
    # NOTE(founders): the spec is never changed: each use copies it anyway,
    # and puts this flavor on its copy.
    if flavor is not None and flavor is spec.flavor:
        flavor = None
    judge = judges_derived(conf)
    reads_original = _reads_original(conf)
    # NOTE(founders): the system metadata is checked (which may ask Glance)
    # after the new image is derived, and once: when deriving the current
    # image needs it, or else right after.
    trusted = _once(lambda: trusted_system_metadata(
        context, orig_sys_metadata, orig_image_ref,
        ask_glance=reads_original))
    # Only reject reads what the current image asks.
    current = ((lambda: original_image_meta(trusted(), orig_image_ref))
               if reads_original else None)
    boot = boot_requirements.derive(context, spec, image_meta,
                                    is_volume_backed, judge=judge,
                                    current=current, flavor=flavor)
    orig_sys_metadata = trusted()
    return nit_request.RebuildRequest(
        instance_uuid=spec.instance_uuid,
        compute_node_uuid=compute_node_uuid,
        image_properties=image_properties_from_image_meta(image_meta),
        flavor=flavor_from_nova(spec.flavor if flavor is None else flavor),
        original_image_properties=image_properties_from_system_metadata(
            orig_sys_metadata),
        is_volume_backed=is_volume_backed,
        resources=boot.query, derived=boot.derived,
        original_derived=boot.original,
        host=host, global_request_id=getattr(context, 'global_id', None),
        forbidden_aggregates=boot_requirements.forbidden_aggregates(
            context, spec, image_meta, flavor=flavor))
