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
"""What a boot of the new image would ask of the host, by nova's own code.

At boot, nova's scheduler runs its request filters
(``nova.scheduler.request_filter.process_reqspec``) on the request spec,
then sends placement what ``ResourceRequest.from_request_spec`` builds
from it. On rebuild it does neither (bug 1772523). :func:`derive` does
both (with :mod:`nova_image_traits.boot_query`), on a clone of the
rebuild's request spec carrying the new image, so that the engine can
judge everything such a boot would ask.

Only what the image adds counts: the same is asked for an image without
properties, and whatever that asks too (the flavor's own traits and
resources) is left out. Each requirement keeps its source, the image
property it disappears without, worked out only when a refusal's reason
or the command line reads it (:mod:`nova_image_traits.sources`): an
accepted rebuild runs nova's request filters on the new image once.
"""

import contextlib

from oslo_log import log as logging

import nova.conf
from nova.scheduler import request_filter

from nova_image_traits import attribution
from nova_image_traits import boot_query
from nova_image_traits import requirements as reqs
from nova_image_traits import sources as nit_sources

LOG = logging.getLogger(__name__)

#: nova's request filters that derive requirements from the image. Each
#: series runs those of them its ``ALL_REQUEST_FILTERS`` lists, so a series
#: that lacks one asks, here as at boot, without it.
IMAGE_FILTERS = frozenset([
    # COMPUTE_IMAGE_TYPE_<disk_format> ([scheduler]
    # query_placement_for_image_type_support).
    'require_image_type_support',
    # Bus, video, VIF, architecture and vIOMMU models ([scheduler]
    # image_metadata_prefilter).
    'transform_image_metadata',
    'packed_virtqueue_filter',
    'ephemeral_encryption_filter',
    'virtio_sound_filter',
    'tpm_secret_security_filter',
])

#: nova's request filters left out, and why: none is about the image.
NOT_ABOUT_THE_IMAGE = {
    'require_tenant_aggregate': 'the project, which a rebuild keeps',
    'map_az_to_placement_aggregate': 'the availability zone, which a '
                                     'rebuild keeps',
    'compute_status_filter': 'whether the compute service is disabled, '
                             'which does not stop a rebuild on it',
    # NOTE(founders): it forbids aggregates, not traits: called alone, once
    # per decision, by forbidden_aggregates below.
    'isolate_aggregates': 'aggregate membership, judged on its own',
    'accelerators_filter': "the flavor's device profile",
    'routed_networks_filter': "the server's networks",
    'remote_managed_ports_filter': "the server's ports",
    'owner_nova_filter': 'which service manages the providers',
}

_warned = set()


@contextlib.contextmanager
def scheduler_options(values):
    """nova's ``[scheduler]`` options set to ``values`` for a derivation.

    For the command line and the status check, which derive under values
    of their own. nova's request filters read its global ``CONF``; each
    option's value is restored afterwards, whether it came from an
    override or from the configuration, so that a caller in the same
    process (a test, an embedding tool) sees what it saw before.

    :param values: option name to value
    """
    conf = nova.conf.CONF
    before = {name: getattr(conf.scheduler, name) for name in values}
    for name, value in values.items():
        conf.set_override(name, value, group='scheduler')
    try:
        yield
    finally:
        for name, value in before.items():
            conf.clear_override(name, group='scheduler')
            if getattr(conf.scheduler, name) != value:
                conf.set_override(name, value, group='scheduler')


def image_filters():
    """nova's image-related request filters, in the order a boot runs them.

    A filter this module knows neither as one nor as the other is logged
    once, as a WARNING: a later nova may have added one.
    """
    chosen = []
    for func in request_filter.ALL_REQUEST_FILTERS:
        name = getattr(func, '__name__', repr(func))
        if name in IMAGE_FILTERS:
            chosen.append(func)
        elif name not in NOT_ABOUT_THE_IMAGE and name not in _warned:
            _warned.add(name)
            LOG.warning('nova request filter %s is not known to '
                        'nova-image-traits: what it asks at boot is not '
                        'judged on rebuild.', name)
    return chosen


class BootRequest:
    """A boot of the server's flavor with the new image, as nova asks it.

    :ivar query: the :class:`~nova_image_traits.flavor.ResourceQuery` of
        the boot, less the image's own requirements: the flavor's traits,
        and the resources the new image asks for
    :ivar derived: the :class:`~nova_image_traits.requirements.Derived`
        requirements of the image, or None when they are not judged
    :ivar original: the derived requirements of the current image (see
        :func:`original`), or None when unknown or not derived
    """

    def __init__(self, query, derived, original=None):
        self.query = query
        self.derived = derived
        self.original = original


def derive(context, spec, image_meta, is_volume_backed, judge=True,
           attribute=True, current=None, flavor=None):
    """Return the :class:`BootRequest` of a boot of ``image_meta``.

    :param context: the request context the request filters are given
    :param spec: the rebuild's ``nova.objects.RequestSpec``; not changed
    :param image_meta: the new image's ``nova.objects.ImageMeta``
    :param is_volume_backed: whether the root disk is a volume
    :param judge: derive requirements (``[image_traits]
        judge_derived_requirements``); else the query is nova's
        ``ResourceRequest``'s without the request filters, less the
        traits it derives from the image, which are not judged
    :param attribute: find the image property each requirement comes
        from, when first read (:class:`~.sources.Sources`)
    :param current: a callable returning the current image's
        ``nova.objects.ImageMeta`` (or None when unknown), or None not to
        derive the current image; called once, only when the new image
        derives anything, for the :attr:`BootRequest.original`
        requirements
    :param flavor: the ``nova.objects.Flavor`` of the boot, when not the
        spec's (nova's API holds the server's before it saves the spec)
    """
    asked = boot_query.Asker(context, spec, is_volume_backed,
                             image_filters() if judge else (), flavor=flavor)
    try:
        new = asked(image_meta, strict=True)
    except Exception as e:
        LOG.warning('Cannot build the placement request of instance '
                    '%(instance)s with nova\'s ResourceRequest (%(error)s); '
                    'judging its flavor alone, and not what nova derives '
                    'from the image.',
                    {'instance': getattr(spec, 'instance_uuid', None),
                     'error': '%s: %s' % (type(e).__name__, e)})
        return BootRequest(None, None)
    if not judge:
        # NOTE(founders): trait: properties only, for every strategy:
        # in_tree_candidates sends this query, so what ResourceRequest
        # derives from the image (vTPM, secure boot...) is left out of it.
        return BootRequest(_added(asked, new, image_meta, False)[0], None)
    if new.refusal:
        query, derived = new.query, reqs.Derived(
            refusal=new.refusal, filters=asked.names)
    else:
        query, derived = _added(asked, new, image_meta, attribute)
    current_image = current() if derived and current is not None else None
    return BootRequest(query, derived, None if current_image is None else
                       original(context, spec, current_image,
                                is_volume_backed, flavor=flavor))


def _added(asked, new, image_meta, attribute):
    """``(query, derived)``: what the image adds to the boot ``new``."""
    variants = attribution.Variants(asked, image_meta)
    base = variants.baseline()
    if base is not None:
        traits = new.traits.keys() - base.traits.keys()
        more = {rc: n for rc, n in new.resources.items()
                if n > base.resources.get(rc, 0)}
    else:
        # NOTE(founders): nova refuses the image without the properties it
        # cannot do without, even with those alone: only what one property
        # adds can be told to be the image's.
        traits = {t for t in new.traits if variants.lose(t)}
        more = {rc: n for rc, n in new.resources.items()
                if variants.lose(rc, n)}
    found = nit_sources.Attribution(lambda: variants.sources(traits, more))

    def sources(key):
        return nit_sources.Sources(found, key) if attribute else ()
    derived = reqs.Derived(
        traits=tuple(sorted(
            reqs.Requirement(trait, scope, forbidden,
                             sources=sources((trait, scope, forbidden)),
                             via=new.traits[trait, scope, forbidden])
            for trait, scope, forbidden in traits)),
        resources=tuple(reqs.ResourceNeed(rc, n, sources=sources(rc))
                        for rc, n in sorted(more.items())),
        filters=asked.names)
    return new.query.without(traits), derived


def original(context, spec, image_meta, is_volume_backed, flavor=None):
    """The requirements a boot of the current image asked, or None.

    :returns: a frozenset of :class:`~.requirements.Requirement`, or None
        when nova cannot build the request
    """
    try:
        request = derive(context, spec, image_meta, is_volume_backed,
                         attribute=False, flavor=flavor)
    except Exception:
        return None
    if request.derived is None:
        return None
    return frozenset(request.derived.traits)


def forbidden_aggregates(context, spec, image_meta, flavor=None):
    """The aggregates a boot of ``image_meta`` may not use, by nova's code.

    nova's request filter ``isolate_aggregates`` (with ``[scheduler]
    enable_isolated_aggregate_filtering``) reads the traits the flavor and
    the image require, asks the API database which aggregates require
    (``trait:X=required``) others, and adds them to
    ``requested_destination.forbidden_aggregates``. It is called once, on
    a clone of the spec carrying the new image: never per image property.
    With the option off (nova's default) nothing is asked.

    :param context: the request context, to read the API database
    :param spec: the rebuild's ``nova.objects.RequestSpec``; not changed
    :param image_meta: the new image's ``nova.objects.ImageMeta``
    :param flavor: as for :func:`derive`
    :returns: a frozenset of aggregate UUIDs
    """
    if not nova.conf.CONF.scheduler.enable_isolated_aggregate_filtering:
        return frozenset()
    clone = spec.obj_clone()
    clone.image = image_meta
    if flavor is not None:
        clone.flavor = flavor
    # NOTE(founders): a boot starts without a destination; what a persisted
    # one holds is of another request (the boot of the former image).
    clone.requested_destination = None
    request_filter.isolate_aggregates(context, clone)
    destination = clone.requested_destination
    if destination is None or 'forbidden_aggregates' not in destination:
        return frozenset()
    return frozenset(destination.forbidden_aggregates or ())
