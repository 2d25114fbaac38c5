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
"""A flavor, and the placement request groups nova builds from it at boot.

Inside nova, the filter and the conductor hook build the request with
nova's own ``nova.scheduler.utils.ResourceRequest``
(:mod:`nova_image_traits.nova_request`). This module is the copy for the
command line, which has no nova: it mirrors ``ResourceRequest`` for what
a flavor alone asks for, that is the unsuffixed group's ``VCPU`` (or
``PCPU`` for ``hw:cpu_policy=dedicated``, one more for
``hw:emulator_threads_policy=isolate``), ``MEMORY_MB`` and ``DISK_GB``,
the ``resources[N]:<RC>`` overrides and granular groups, the
``trait[N]:<NAME>=required|forbidden`` traits, ``hw:cpu_thread_policy``
and ``group_policy``. What it does not mirror (image ``hw_*`` properties,
``hw:cpu_policy=mixed``, memory encryption, vTPM, vPMEM, secure boot) is
listed in ``tests/functional/nova/test_resource_request.py``.
"""

import collections
import dataclasses
import math
import re
import types
import typing as ty
import urllib.parse

import os_resource_classes as orc

from nova_image_traits import requirements as nit_reqs
from nova_image_traits import traits as nit_traits

#: An extra spec key ``resources[N]:<RC>`` or ``trait[N]:<NAME>``.
_KEY = re.compile(r'(resources|trait)([^:]*):(.*)', re.DOTALL)
#: A per-group parameter of GET /allocation_candidates and its suffix.
_GROUP_PARAM = re.compile(r'^(resources|required|member_of)(.*)$')


def _listed(values):
    """The required and the forbidden trait names in ``required`` values."""
    names = [name for value in values for name in value.split(',') if name]
    return (frozenset(n for n in names if not n.startswith('!')),
            frozenset(n[1:] for n in names if n.startswith('!')))


@dataclasses.dataclass(frozen=True)
class RequestGroup:
    """One request group of an allocation candidates query.

    :ivar suffix: '' for the unsuffixed group, else the granular suffix
    :ivar resources: mapping of resource class to amount
    :ivar required: trait names every provider of the group must have
        (for the unsuffixed group: the union of its providers)
    :ivar forbidden: trait names no provider of the group may have
    :ivar member_of: ``member_of`` values (``in:<agg>,<agg>``)
    """
    suffix: str = ''
    resources: ty.Mapping[str, int] = dataclasses.field(
        default_factory=dict)
    required: frozenset = frozenset()
    forbidden: frozenset = frozenset()
    member_of: tuple = ()


@dataclasses.dataclass(frozen=True)
class ResourceQuery:
    """What a boot of the server asks placement for.

    The new image's ``trait:<NAME>=required`` traits are left out: the
    strategies add them where nova does, to the unsuffixed group.

    :ivar groups: :class:`RequestGroup` objects, the unsuffixed one first
    :ivar group_policy: ``none``, ``isolate`` or None
    :ivar same_subtree: tuples of group suffixes
    :ivar root_required: traits the root provider must have
    :ivar root_forbidden: traits the root provider must not have
    :ivar source: ``nova`` when nova's ``ResourceRequest`` built it,
        ``flavor`` when :meth:`Flavor.resource_query` did
    """
    groups: tuple = ()
    group_policy: ty.Optional[str] = None
    same_subtree: tuple = ()
    root_required: frozenset = frozenset()
    root_forbidden: frozenset = frozenset()
    source: str = 'flavor'

    @classmethod
    def from_querystring(cls, querystring):
        """Parse a ``GET /allocation_candidates`` query string.

        :param querystring: what nova's ``ResourceRequest.to_querystring()``
            returns, the public form of its request
        :returns: a query with ``source='nova'``; ``in_tree`` and ``limit``
            are the strategies' to set, so they are not read
        """
        params = urllib.parse.parse_qs(querystring)
        suffixes = {''} | {match.group(2)
                           for match in map(_GROUP_PARAM.match, params)
                           if match}
        groups = []
        for sfx in sorted(suffixes):
            amounts = [item.partition(':')
                       for value in params.get('resources' + sfx, ())
                       for item in value.split(',') if item]
            required, forbidden = _listed(params.get('required' + sfx, ()))
            groups.append(RequestGroup(
                sfx, {rc: int(amount) for rc, _sep, amount in amounts},
                required, forbidden,
                tuple(params.get('member_of' + sfx, ()))))
        root_required, root_forbidden = _listed(
            params.get('root_required', ()))
        return cls(
            groups=tuple(groups),
            group_policy=params.get('group_policy', [None])[-1],
            same_subtree=tuple(tuple(value.split(','))
                               for value in params.get('same_subtree', ())),
            root_required=root_required, root_forbidden=root_forbidden,
            source='nova')

    def without(self, traits):
        """This query less some traits of the unsuffixed group or root.

        :param traits: ``(name, scope, forbidden)`` keys of
            :class:`~nova_image_traits.requirements.Requirement` objects
        """
        def keep(names, scope, forbidden):
            return frozenset(n for n in names
                             if (n, scope, forbidden) not in traits)
        groups = tuple(
            dataclasses.replace(
                g, required=keep(g.required, nit_reqs.UNSUFFIXED, False),
                forbidden=keep(g.forbidden, nit_reqs.UNSUFFIXED, True))
            if not g.suffix else g for g in self.groups)
        return dataclasses.replace(
            self, groups=groups,
            root_required=keep(self.root_required, nit_reqs.ROOT, False),
            root_forbidden=keep(self.root_forbidden, nit_reqs.ROOT, True))

    @property
    def unsuffixed(self):
        """The unsuffixed group, which carries the image's traits."""
        return next((g for g in self.groups if not g.suffix),
                    RequestGroup(''))

    @property
    def numbered(self):
        """The granular (suffixed) groups."""
        return tuple(g for g in self.groups if g.suffix)


@dataclasses.dataclass(frozen=True)
class Flavor:
    """The parts of a nova flavor that matter to placement.

    :ivar swap: swap size in MiB, as nova stores it
    """
    vcpus: int = 0
    memory_mb: int = 0
    root_gb: int = 0
    ephemeral_gb: int = 0
    swap: int = 0
    extra_specs: ty.Mapping[str, str] = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({}))
    name: ty.Optional[str] = None

    def _specs(self, prefix):
        """(suffix, name, value) of every ``<prefix>[N]:<name>`` key."""
        for key, value in self.extra_specs.items():
            match = _KEY.fullmatch(str(key))
            if match and match.group(1) == prefix:
                yield match.group(2), match.group(3), value

    def _traits(self, value):
        return frozenset(n for _s, n, v in self._specs('trait')
                         if str(v) == value)

    @property
    def required_traits(self):
        """Traits any group of the flavor requires."""
        return self._traits(nit_traits.REQUIRED)

    @property
    def forbidden_traits(self):
        """Traits any group of the flavor forbids.

        Nova's own check reads every ``trait*:<NAME>=forbidden`` key.
        """
        return self._traits(nit_traits.FORBIDDEN)

    @property
    def group_policy(self):
        return self.extra_specs.get('group_policy')

    def request_groups(self, is_volume_backed=False, image_traits=()):
        """Return the request groups nova would send for this flavor.

        :param is_volume_backed: True when the root disk is a volume, so
            ``root_gb`` takes no local ``DISK_GB``
        :param image_traits: traits the image requires; nova adds them to
            the unsuffixed group
        :returns: a list of :class:`RequestGroup`, unsuffixed first
        """
        resources = collections.defaultdict(dict)
        for suffix, rclass, value in self._specs('resources'):
            amount = _amount(rclass, value)
            if amount is not None:
                resources[suffix][rclass] = amount
        required = collections.defaultdict(set)
        forbidden = collections.defaultdict(set)
        traits = {nit_traits.REQUIRED: required,
                  nit_traits.FORBIDDEN: forbidden}
        for suffix, name, value in self._specs('trait'):
            if str(value) in traits:
                traits[str(value)][suffix].add(name)

        base = {}
        disk = self.ephemeral_gb + int(math.ceil(self.swap / 1024.0))
        if not is_volume_backed:
            disk += self.root_gb
        # As nova does, a resource class the extra specs name in any group
        # replaces what the flavor's own fields imply.
        explicit = {rc for amounts in resources.values() for rc in amounts}
        dedicated = self.extra_specs.get('hw:cpu_policy') == 'dedicated'
        if not dedicated and not explicit & {'VCPU', 'PCPU'}:
            base['VCPU'] = self.vcpus
        if 'MEMORY_MB' not in explicit:
            base['MEMORY_MB'] = self.memory_mb
        if 'DISK_GB' not in explicit:
            base['DISK_GB'] = disk
        # Explicit resources: extra specs override what the flavor implies.
        base.update(resources[''])
        if dedicated:
            # As nova's _translate_pinning_policies: after the extra specs,
            # so it wins over an explicit resources:PCPU.
            base['PCPU'] = self.vcpus + (
                1 if self.extra_specs.get('hw:emulator_threads_policy') ==
                'isolate' else 0)
        resources[''] = base
        required[''].update(image_traits)
        thread_trait = _THREAD_POLICY_TRAIT.get(
            self.extra_specs.get('hw:cpu_thread_policy'))
        if thread_trait:
            traits[thread_trait][''].add('HW_CPU_HYPERTHREADING')

        return [RequestGroup(
            suffix,
            {rc: n for rc, n in resources[suffix].items() if n > 0},
            frozenset(required[suffix]), frozenset(forbidden[suffix]))
            for suffix in sorted(set(resources) | set(required) |
                                 set(forbidden))]

    def resource_query(self, is_volume_backed=False):
        """Return the :class:`ResourceQuery` a boot of this flavor sends.

        :param is_volume_backed: see :meth:`request_groups`
        """
        policy = self.group_policy
        return ResourceQuery(
            groups=tuple(self.request_groups(is_volume_backed)),
            group_policy=policy if policy in ('none', 'isolate') else None)


#: hw:cpu_thread_policy -> how nova asks for HW_CPU_HYPERTHREADING.
_THREAD_POLICY_TRAIT = {'isolate': nit_traits.FORBIDDEN,
                        'require': nit_traits.REQUIRED}


def _amount(rclass, value):
    """The amount nova accepts for ``resources*:<rclass>``, or None.

    Like ``nova.objects.RequestGroup.add_resource``: an unknown standard
    class, or an amount that is not a nonnegative integer, is skipped.
    """
    if not (rclass.startswith(orc.CUSTOM_NAMESPACE) or
            rclass in orc.STANDARDS):
        return None
    try:
        amount = int(value)
    except (TypeError, ValueError):
        return None
    return amount if amount >= 0 else None
