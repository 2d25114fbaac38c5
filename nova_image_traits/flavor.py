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

This mirrors ``nova.scheduler.utils.ResourceRequest`` for what a flavor
alone asks for: the unsuffixed group's ``VCPU`` (or ``PCPU`` for
``hw:cpu_policy=dedicated``), ``MEMORY_MB`` and ``DISK_GB``, the
``resources[N]:<RC>`` overrides and granular groups, the
``trait[N]:<NAME>=required|forbidden`` traits and ``group_policy``. Callers
that know better may pass their own groups in the request.
"""

import collections
import dataclasses
import math
import types
import typing as ty

from nova_image_traits import traits as nit_traits

_RESOURCES = 'resources'
_TRAIT = 'trait'


@dataclasses.dataclass(frozen=True)
class RequestGroup:
    """One request group of an allocation candidates query.

    :ivar suffix: '' for the unsuffixed group, else the granular suffix
    :ivar resources: mapping of resource class to amount
    :ivar required: trait names every provider of the group must have
        (for the unsuffixed group: the union of its providers)
    :ivar forbidden: trait names no provider of the group may have
    """
    suffix: str = ''
    resources: ty.Mapping[str, int] = dataclasses.field(
        default_factory=dict)
    required: frozenset = frozenset()
    forbidden: frozenset = frozenset()


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

    def _trait_specs(self):
        for key, value in self.extra_specs.items():
            prefix, sep, name = str(key).partition(':')
            if sep and prefix.startswith(_TRAIT):
                yield prefix[len(_TRAIT):], name, str(value)

    @property
    def required_traits(self):
        """Traits any group of the flavor requires."""
        return frozenset(n for _s, n, v in self._trait_specs()
                         if v == nit_traits.REQUIRED)

    @property
    def forbidden_traits(self):
        """Traits any group of the flavor forbids.

        Nova's own check reads every ``trait*:<NAME>=forbidden`` key.
        """
        return frozenset(n for _s, n, v in self._trait_specs()
                         if v == nit_traits.FORBIDDEN)

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
        required = collections.defaultdict(set)
        forbidden = collections.defaultdict(set)
        for key, value in self.extra_specs.items():
            prefix, sep, name = str(key).partition(':')
            if not sep:
                continue
            if prefix.startswith(_RESOURCES):
                try:
                    amount = int(value)
                except (TypeError, ValueError):
                    continue
                resources[prefix[len(_RESOURCES):]][name] = amount
        for suffix, name, value in self._trait_specs():
            if value == nit_traits.REQUIRED:
                required[suffix].add(name)
            elif value == nit_traits.FORBIDDEN:
                forbidden[suffix].add(name)

        base = {}
        disk = self.ephemeral_gb + int(math.ceil(self.swap / 1024.0))
        if not is_volume_backed:
            disk += self.root_gb
        # As nova does, a resource class the extra specs name in any group
        # replaces what the flavor's own fields imply.
        explicit = {rc for amounts in resources.values() for rc in amounts}
        if self.extra_specs.get('hw:cpu_policy') == 'dedicated':
            base['PCPU'] = self.vcpus
        elif not explicit & {'VCPU', 'PCPU'}:
            base['VCPU'] = self.vcpus
        if 'MEMORY_MB' not in explicit:
            base['MEMORY_MB'] = self.memory_mb
        if 'DISK_GB' not in explicit:
            base['DISK_GB'] = disk
        # Explicit resources: extra specs override what the flavor implies.
        base.update(resources.pop('', {}))
        required[''].update(image_traits)

        groups = [RequestGroup(
            '', {rc: n for rc, n in base.items() if n > 0},
            frozenset(required.pop('', ())),
            frozenset(forbidden.pop('', ())))]
        for suffix in sorted(set(resources) | set(required) |
                             set(forbidden)):
            groups.append(RequestGroup(
                suffix,
                {rc: n for rc, n in resources.get(suffix, {}).items()
                 if n > 0},
                frozenset(required.get(suffix, ())),
                frozenset(forbidden.get(suffix, ()))))
        return groups
