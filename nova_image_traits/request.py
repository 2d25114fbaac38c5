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
"""What a rebuild decision is asked about."""

import dataclasses
import typing as ty

from nova_image_traits import flavor as nit_flavor
from nova_image_traits import requirements as nit_requirements


@dataclasses.dataclass(frozen=True)
class RebuildRequest:
    """A rebuild of one server, on its current host, with a new image.

    :ivar instance_uuid: the server, which is also its placement consumer
    :ivar compute_node_uuid: the resource provider of the compute node the
        server runs on; nova makes it the root of its provider tree
    :ivar image_properties: the new image's properties (Glance's flat
        dict or nova's image dict)
    :ivar flavor: the server's :class:`~nova_image_traits.flavor.Flavor`
    :ivar original_image_properties: the current image's properties, or
        None when the caller cannot know them (the scheduler filter)
    :ivar resources: the :class:`~nova_image_traits.flavor.ResourceQuery`
        a boot of the server sends, built by nova's own ``ResourceRequest``
        inside nova; None derives it from the flavor alone (the command
        line, which has no nova)
    :ivar derived: the :class:`~nova_image_traits.requirements.Derived`
        requirements nova derives from the new image beyond its
        ``trait:`` properties, built with nova's own code inside nova;
        None when they are not judged (the command line without nova, or
        ``[image_traits] judge_derived_requirements = False``)
    :ivar original_derived: the derived requirements of the current
        image (a frozenset of
        :class:`~nova_image_traits.requirements.Requirement`), or None when
        unknown
    :ivar global_request_id: nova's global request id
        (``context.global_id``), sent to placement as
        ``X-OpenStack-Request-ID`` so that its log ties to the nova request
    :ivar forbidden_aggregates: the aggregates a boot of the new image may
        not use (nova's ``isolate_aggregates``, with ``[scheduler]
        enable_isolated_aggregate_filtering``), a frozenset of UUIDs; empty
        when isolation is off or forbids nothing
    """
    instance_uuid: str
    compute_node_uuid: str
    image_properties: ty.Any
    flavor: nit_flavor.Flavor = dataclasses.field(
        default_factory=nit_flavor.Flavor)
    original_image_properties: ty.Any = None
    is_volume_backed: bool = False
    resources: ty.Optional[nit_flavor.ResourceQuery] = None
    host: ty.Optional[str] = None
    global_request_id: ty.Optional[str] = None
    derived: ty.Optional[nit_requirements.Derived] = None
    original_derived: ty.Optional[frozenset] = None
    forbidden_aggregates: frozenset = frozenset()

    def asks(self):
        """Whether the new image asks anything a decision judges.

        When it does not, the filter, the hook and the pre-check decide
        nothing and send placement nothing, as nova's own check does.
        """
        return bool(self.image_properties) or bool(self.derived)

    def judged(self):
        """Whether a decision has anything to judge.

        What the new image asks (:meth:`asks`), or aggregates isolation
        forbids a boot of it: a new image that asks nothing is exactly what
        isolation keeps off an isolated host. When neither, the filter, the
        hook and the pre-check decide nothing.
        """
        return self.asks() or bool(self.forbidden_aggregates)

    def resource_query(self):
        """The boot query of this server, less the image's requirements.

        It is nova's own when the caller built it with nova, else the
        flavor's (:class:`~nova_image_traits.flavor.ResourceQuery`).
        """
        if self.resources is not None:
            return self.resources
        return self.flavor.resource_query(self.is_volume_backed)

    def boot_asks(self, judge_derived=True):
        """What a boot of the new image asks, each item with its source.

        :param judge_derived: ``[image_traits]
            judge_derived_requirements``; when False, what nova derives is
            left out
        :returns: a :class:`~nova_image_traits.requirements.BootAsks`
        """
        return nit_requirements.boot_asks(self.image_properties,
                                          self.derived, judge_derived)

    def conflicts(self, requirements):
        """The traits both required and forbidden in one request group.

        Placement checks each request group alone (``_check_forbidden``),
        so a ``trait1:X=forbidden`` in the flavor does not conflict with an
        image trait ``X``, which belongs to the unsuffixed group. The
        flavor's own groups count, whatever nova derived from the image
        (with ``judge_derived_requirements`` off, nova's query keeps it).

        :param requirements: what the new image asks
        :returns: ``(required, forbidden)`` pairs, sorted
        """
        query = self.flavor.resource_query(self.is_volume_backed)
        flavor = [nit_requirements.Requirement(
            name, scope, True, sources=('flavor',), via='flavor')
            for names, scope in ((query.unsuffixed.forbidden,
                                  nit_requirements.UNSUFFIXED),
                                 (query.root_forbidden,
                                  nit_requirements.ROOT))
            for name in names]
        return nit_requirements.conflicts(
            nit_requirements.merge(flavor, requirements))
