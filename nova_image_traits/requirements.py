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
"""What a boot of an image asks of a host, requirement by requirement.

An image asks for traits in two ways. Its ``trait:<NAME>=required``
properties go into the unsuffixed request group. Nova also derives
requirements from its other properties: ``ResourceRequest`` adds traits to
the unsuffixed group (vTPM, secure boot, stateless firmware, memory
encryption, CPU thread policy) and resources (``MEM_ENCRYPTION_CONTEXT``,
``PCPU``), and the scheduler's request filters add traits the compute
node's root provider must have (disk bus, video model, image type, ...).
Placement judges the two scopes differently, so each
:class:`Requirement` keeps its scope, and its source for the reason a
user reads.

:mod:`nova_image_traits.boot_requirements` derives them with nova's code;
this module only holds them, and imports nothing from nova.
"""

import dataclasses
import typing as ty
import urllib.parse

from nova_image_traits import traits as nit_traits

#: The unsuffixed request group, where nova puts an image's traits.
UNSUFFIXED = 'unsuffixed'
#: ``root_required``: the compute node's root provider, where the
#: scheduler's request filters put theirs.
ROOT = 'root'

#: ``via`` of a ``trait:<NAME>=required`` image property.
IMAGE_PROPERTY = 'image'
#: ``via`` of what nova's ``ResourceRequest`` derives.
RESOURCE_REQUEST = 'ResourceRequest'
#: The cause a log line gives a derived requirement whose sources were
#: not worked out (an accepted rebuild: see
#: :class:`~nova_image_traits.sources.Sources`).
NOT_ATTRIBUTED = '-'


def _logged_cause(sources, cause, attribute):
    """The cause of a log line's token: ``-`` when not worked out."""
    if not attribute and not getattr(sources, 'known', True):
        return NOT_ATTRIBUTED
    return '+'.join(sources) if sources else cause()


@dataclasses.dataclass(frozen=True, order=True)
class Requirement:
    """One trait a boot of the image asks for, or forbids, and where.

    Two requirements are equal when they ask the same of the same scope,
    whatever their sources.

    :ivar trait: the trait name
    :ivar scope: :data:`UNSUFFIXED` or :data:`ROOT`
    :ivar forbidden: True when the trait must be absent
    :ivar sources: the image properties that cause it, as ``key=value``
        strings; empty when no single property does. What nova derives
        has :class:`~nova_image_traits.sources.Sources`, worked out on
        first read
    :ivar via: :data:`IMAGE_PROPERTY`, :data:`RESOURCE_REQUEST` or the
        name of the nova request filter that adds it
    """
    trait: str
    scope: str = UNSUFFIXED
    forbidden: bool = False
    sources: tuple = dataclasses.field(default=(), compare=False)
    via: str = dataclasses.field(default=IMAGE_PROPERTY, compare=False)

    @property
    def derived(self):
        """Whether nova derives it (it is not a ``trait:`` property)."""
        return self.via != IMAGE_PROPERTY

    def cause(self):
        """The property, or properties, a user set to ask for it."""
        if self.sources:
            return ', '.join(self.sources)
        if not self.derived:
            return nit_traits.TRAIT_PREFIX + self.trait
        return 'the new image'

    def logged(self, attribute=True):
        """A compact token for the decision log line, without spaces.

        ``[!][root:]TRAIT<cause|via>``, e.g.
        ``root:COMPUTE_STORAGE_BUS_SCSI<hw_disk_bus=scsi|transform_image_metadata>``;
        several sources are joined with ``+``, and anything but letters,
        digits and ``=:._-`` is percent-encoded.

        :param attribute: work out sources not yet known; else their cause
            reads :data:`NOT_ATTRIBUTED`
        """
        cause = _logged_cause(self.sources, self.cause, attribute)
        return '%s%s%s<%s|%s>' % (
            '!' if self.forbidden else '',
            'root:' if self.scope == ROOT else '',
            self.trait, logged(cause), logged(self.via))


@dataclasses.dataclass(frozen=True)
class ResourceNeed:
    """A resource class a boot of the new image asks more of.

    :ivar resource_class: e.g. ``MEM_ENCRYPTION_CONTEXT``
    :ivar amount: what the boot of the new image asks in all
    :ivar sources: the image properties that cause it (``key=value``),
        as :attr:`Requirement.sources`
    """
    resource_class: str
    amount: int
    sources: tuple = dataclasses.field(default=(), compare=False)

    def cause(self):
        return ', '.join(self.sources) or 'the new image'

    def logged(self, attribute=True):
        """``CLASS:amount<cause>`` for the decision log line."""
        return '%s:%d<%s>' % (self.resource_class, self.amount, logged(
            _logged_cause(self.sources, lambda: 'image', attribute)))


@dataclasses.dataclass(frozen=True)
class Derived:
    """What nova derives from an image beyond its ``trait:`` properties.

    Only what the image adds to the boot request counts: what the flavor
    alone asks for was judged when the server was created and does not
    change on rebuild.

    :ivar traits: :class:`Requirement` objects
    :ivar resources: :class:`ResourceNeed` objects
    :ivar refusal: when a request filter refuses the image, as at boot
        (``RequestFilterFailed``, which the scheduler turns into
        ``NoValidHost``), its reason; else None
    :ivar filters: the names of the request filters that were consulted
    """
    traits: tuple = ()
    resources: tuple = ()
    refusal: ty.Optional[str] = None
    filters: tuple = ()

    def __bool__(self):
        return bool(self.traits or self.resources or self.refusal)

    def attributed(self):
        """Work out every source now (the command line); return self."""
        for item in self.traits + self.resources:
            tuple(item.sources)
        return self


@dataclasses.dataclass(frozen=True)
class BootAsks:
    """Everything a boot of the new image asks, each item with its source.

    :ivar image: the :class:`~nova_image_traits.traits.ImageTraits` of the
        image's ``trait:`` properties (its required, invalid and ignored
        ones)
    :ivar requirements: every :class:`Requirement` to judge: the image's
        ``trait:`` properties and what nova derives, merged and sorted
    :ivar resources: :class:`ResourceNeed` objects
    :ivar refusal: a request filter's refusal of the image, or None
    :ivar derived: ``judged``, ``off`` (``[image_traits]
        judge_derived_requirements``) or ``unknown`` (nova's code could not
        derive them)
    """
    image: nit_traits.ImageTraits
    requirements: tuple = ()
    resources: tuple = ()
    refusal: ty.Optional[str] = None
    derived: str = 'unknown'

    @property
    def required(self):
        """The names of the traits required, in any scope."""
        return frozenset(r.trait for r in self.requirements if not r.forbidden)


def boot_asks(image_properties, derived, judge=True):
    """The :class:`BootAsks` of an image.

    :param image_properties: its properties, in any form
        :func:`~nova_image_traits.traits.image_traits` reads
    :param derived: what nova derives from it (:class:`Derived`), or None
        when unknown
    :param judge: whether what nova derives is judged at all
    """
    wanted = nit_traits.image_traits(image_properties)
    derived = derived if judge else None
    return BootAsks(
        image=wanted,
        requirements=merge(from_image_traits(wanted.required),
                           derived.traits if derived else ()),
        resources=derived.resources if derived else (),
        refusal=derived.refusal if derived is not None else None,
        derived=('off' if not judge else
                 'judged' if derived is not None else 'unknown'))


def logged(text):
    """``text`` for a log line: bounded, percent-encoded, no spaces."""
    return urllib.parse.quote(str(text)[:120], safe='=+:._-')


def from_image_traits(names):
    """The requirements of ``trait:<NAME>=required`` properties.

    :param names: valid trait names
    :returns: a tuple of :class:`Requirement`, sorted
    """
    return tuple(sorted(Requirement(name) for name in names))


def merge(*groups):
    """Merge requirements, keeping the first of equal ones, sorted."""
    merged = {}
    for requirement in (r for group in groups for r in group):
        merged.setdefault(requirement, requirement)
    return tuple(sorted(merged))


def conflicts(requirements):
    """The traits required and forbidden in the same scope.

    Placement refuses such a query (``_check_forbidden`` in
    ``placement/lib.py`` checks each group alone), so a boot would fail.

    :param requirements: :class:`Requirement` objects
    :returns: a sorted list of ``(required, forbidden)`` pairs
    """
    forbidden = {(r.trait, r.scope): r for r in requirements if r.forbidden}
    return sorted((r, forbidden[r.trait, r.scope]) for r in requirements
                  if not r.forbidden and (r.trait, r.scope) in forbidden)


def unmet(requirements, traits, scope=None):
    """The requirements a set of traits does not meet.

    :param requirements: :class:`Requirement` objects
    :param traits: the traits found (the union of the providers judged)
    :param scope: judge only requirements of this scope; all when None
    """
    return [r for r in requirements
            if (scope is None or r.scope == scope) and
            (r.trait in traits) == r.forbidden]
