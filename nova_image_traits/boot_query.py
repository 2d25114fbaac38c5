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
"""What one boot of one image sends placement, by nova's own code.

:class:`Asker` runs nova's request filters on a clone of the request
spec, then builds the query of nova's ``ResourceRequest`` from it, as the
scheduler does at boot; the derivation
(:mod:`nova_image_traits.boot_requirements`) and the attribution
(:mod:`nova_image_traits.attribution`) ask it about the new image and its
variants. It is the only module that calls nova's request filters.
"""

import collections

from nova import exception as nova_exception
from nova import objects
from nova.scheduler import utils as scheduler_utils

from nova_image_traits import flavor as nit_flavor
from nova_image_traits import requirements as reqs


class Asked:
    """What one boot asks: ``{(trait, scope, forbidden): via}``, resources."""

    def __init__(self, query, traits, resources, refusal=None):
        self.query = query
        self.traits = traits
        self.resources = resources
        self.refusal = refusal


class Asker:
    """Ask nova what a boot of one image would send placement."""

    def __init__(self, context, spec, is_volume_backed, filters,
                 flavor=None):
        self.context = context
        # NOTE(founders): one copy for every image asked about: the request
        # filters and ResourceRequest change only its image and its
        # request-level parameters, which each ask sets anew.
        self.spec = spec.obj_clone()
        self.spec.is_bfv = bool(is_volume_backed)
        if flavor is not None:
            self.spec.flavor = flavor
        self.filters = tuple(filters)
        self.names = tuple(f.__name__ for f in self.filters)

    def __call__(self, image, strict):
        """What a boot of ``image`` asks.

        :param strict: let an unexpected failure of nova's code raise, and
            return a request filter's refusal; else (an image made up to
            attribute requirements) a filter that fails adds nothing, and
            None is returned when nova refuses the image
        """
        spec = self.spec
        spec.image = image.obj_clone()
        # NOTE(founders): a boot starts from empty request-level parameters
        # (RequestSpec.from_components); they are never persisted.
        spec.request_level_params = objects.RequestLevelParams()
        via = {}
        for func in self.filters:
            before = (set(spec.root_required), set(spec.root_forbidden))
            try:
                func(self.context, spec)
            except nova_exception.RequestFilterFailed as e:
                # NOTE(founders): the scheduler turns it into NoValidHost and
                # stops there (SchedulerManager.select_destinations).
                if not strict:
                    return None
                return Asked(None, {}, {}, refusal=str(
                    e.kwargs.get('reason') or e.message))
            except Exception:
                if strict:
                    raise
                continue
            for name in spec.root_required - before[0]:
                via[name, reqs.ROOT, False] = func.__name__
            for name in spec.root_forbidden - before[1]:
                via[name, reqs.ROOT, True] = func.__name__
        try:
            query = _query(spec)
        except Exception:
            if strict:
                raise
            return None
        group = query.unsuffixed
        for names, forbidden in ((group.required, False),
                                 (group.forbidden, True)):
            for name in names:
                via[name, reqs.UNSUFFIXED, forbidden] = reqs.RESOURCE_REQUEST
        # Anything else a root trait came from is the spec's own.
        for names, forbidden in ((query.root_required, False),
                                 (query.root_forbidden, True)):
            for name in names:
                via.setdefault((name, reqs.ROOT, forbidden),
                               reqs.RESOURCE_REQUEST)
        resources = collections.Counter()
        for g in query.groups:
            resources.update(g.resources)
        return Asked(query, via, dict(resources))


def resource_query(spec):
    """The query nova's ``ResourceRequest`` builds for ``spec``.

    Less the image's ``trait:`` properties, which the engine judges, and
    without what the request filters would add (see
    :func:`nova_image_traits.boot_requirements.derive`).

    :param spec: a ``nova.objects.RequestSpec``; not changed
    :returns: a :class:`~nova_image_traits.flavor.ResourceQuery`
    """
    clone = spec.obj_clone()
    if 'image' in clone and clone.image:
        clone.image = clone.image.obj_clone()
    return _query(clone)


def _query(spec):
    """``resource_query`` of a clone of the spec, which it changes."""
    if 'image' in spec and spec.image and 'properties' in spec.image:
        # The image's trait: properties are the engine's to judge.
        spec.image.properties.traits_required = []
    res_req = scheduler_utils.ResourceRequest.from_request_spec(
        spec, enable_pinning_translate=True)
    return nit_flavor.ResourceQuery.from_querystring(
        res_req.to_querystring())
