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
"""Aggregate isolation for the command line, which has no API database.

Inside nova, :func:`nova_image_traits.boot_requirements.forbidden_aggregates`
calls nova's ``isolate_aggregates``, which reads the aggregates from the
API database. The commands read them from the compute API instead (``GET
/os-aggregates``, once per command) and apply the same rule here:
:func:`forbidden`. ``tests/functional/nova/test_cli_isolation.py`` holds
it to nova's function on the same inputs.
"""

from oslo_config import cfg

from nova_image_traits import requirements as nit_requirements
from nova_image_traits import traits as nit_traits

#: nova's option, read from nova.conf as the scheduler reads it.
OPTION = 'enable_isolated_aggregate_filtering'
#: The metadata of an aggregate isolated for a trait: ``trait:X=required``.
PREFIX, REQUIRED = 'trait:', 'required'


def enabled(conf):
    """Whether ``[scheduler] enable_isolated_aggregate_filtering`` is on.

    The option is registered on the command's ConfigOpts (read from
    nova.conf) when nova's own is not: same name, same default (False).
    """
    if 'scheduler' not in conf or OPTION not in conf.scheduler:
        conf.register_opt(cfg.BoolOpt(OPTION, default=False),
                          group='scheduler')
    return conf.scheduler[OPTION]


def required_traits(request):
    """The traits nova's ``ResourceRequest.all_required_traits`` holds.

    Every request group's required traits: the flavor's (``trait:`` and
    ``trait<N>:``), the new image's ``trait:`` properties, and what nova's
    ``ResourceRequest`` derives from the image into the unsuffixed group
    (when derived). Not ``root_required``: nova leaves it out too.

    :param request: a :class:`~nova_image_traits.request.RebuildRequest`
    """
    names = set(nit_traits.image_traits(request.image_properties).required)
    for group in request.resource_query().groups:
        names |= set(group.required)
    for r in (request.derived.traits if request.derived else ()):
        if r.scope == nit_requirements.UNSUFFIXED and not r.forbidden:
            names.add(r.trait)
    return frozenset(names)


def forbidden(aggregates, required):
    """The aggregates a boot requiring ``required`` may not use.

    nova's ``AggregateList.get_non_matching_by_metadata_keys(ctxt,
    ['trait:<each required>'], 'trait:', value='required')``: every
    aggregate with a metadata key starting with ``trait:`` (SQL ``LIKE``,
    which ignores the case of ASCII letters) whose value is ``required``
    and whose key is not one of the required traits'.

    :param aggregates: ``(uuid, metadata)`` pairs
    :param required: trait names
    :returns: a frozenset of aggregate UUIDs
    """
    ignored = {PREFIX + name for name in required}
    return frozenset(
        uuid for uuid, metadata in aggregates
        if any(str(key).lower().startswith(PREFIX) and value == REQUIRED and
               key not in ignored for key, value in metadata.items()))


class Aggregates:
    """nova's aggregates, read once from the compute API.

    :param conn: an ``openstack.connection.Connection`` with admin rights
    """

    def __init__(self, conn):
        self._conn = conn
        self._pairs = None

    def pairs(self):
        """``(uuid, metadata)`` of every aggregate with ``trait:`` keys."""
        if self._pairs is None:
            self._pairs = [
                (str(agg.uuid), dict(agg.metadata or {}))
                for agg in self._conn.compute.aggregates()
                if any(str(k).lower().startswith(PREFIX)
                       for k in (agg.metadata or {}))]
        return self._pairs

    def forbidden(self, request):
        """What isolation forbids a boot of ``request``'s new image."""
        pairs = self.pairs()
        return forbidden(pairs, required_traits(request)) if pairs else (
            frozenset())
