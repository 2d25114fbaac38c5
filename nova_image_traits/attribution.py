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
"""Which image property each requirement nova derives comes from.

nova says what a boot asks, not why. :class:`Variants` asks again for the
new image less one property at a time: a requirement that disappears
without a property comes from it (:meth:`Variants.sources`, the
attribution a reason and the command line show). The derivation
(:mod:`nova_image_traits.boot_requirements`) reads the same variants for
what the image adds at all, when nova refuses the image without
properties (:meth:`Variants.baseline`, :meth:`Variants.lose`).
"""

import collections

from nova import objects


def _rendered(value):
    """A property value as a user wrote it, printable and short."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    text = ''.join(c if c.isprintable() else '?' for c in str(value))
    return text if len(text) <= 40 else text[:37] + '...'


def _fields(obj, skip=()):
    return {name: getattr(obj, name) for name in obj.fields
            if name not in skip and obj.obj_attr_is_set(name)}


def _image(top, props):
    return objects.ImageMeta(properties=objects.ImageMetaProps(**props),
                             **top)


class Variants:
    """The new image less one property at a time, each asked once.

    :param asked: what a boot of an image asks, ``asked(image,
        strict=False)``
    :param image_meta: the new image's ``nova.objects.ImageMeta``
    """

    def __init__(self, asked, image_meta):
        self.asked = asked
        self.top = _fields(image_meta, skip=('properties', 'id', 'name'))
        self.props = (_fields(image_meta.properties,
                              skip=('traits_required',))
                      if 'properties' in image_meta else {})
        self._each = None

    def each(self):
        """``[(key, 'key=value', what the image less key asks or None)]``."""
        if self._each is None:
            keys = sorted(self.props) + sorted(
                k for k in self.top if k == 'disk_format')
            self._each = []
            for key in keys:
                value = self.props.get(key, self.top.get(key))
                self._each.append((key, '%s=%s' % (key, _rendered(value)),
                                   self.asked(self._image(exclude={key}),
                                              strict=False)))
        return self._each

    def _image(self, exclude=(), only=None):
        def keep(k):
            return k not in exclude and (only is None or k in only)
        return _image({k: v for k, v in self.top.items() if keep(k)},
                      {k: v for k, v in self.props.items() if keep(k)})

    def baseline(self):
        """What an image without properties asks.

        Or, when nova refuses that, an image with only the properties nova
        cannot do without; None when nova refuses both.
        """
        base = self.asked(_image({}, {}), strict=False)
        if base is not None:
            return base
        # NOTE(founders): the flavor's own requests may need image
        # properties (hw:mem_encryption needs hw_firmware_type=uefi): they
        # are the flavor's, not the image's.
        needed = {key for key, _src, without in self.each()
                  if without is None}
        if not needed:
            return None
        return self.asked(self._image(only=needed), strict=False)

    def lose(self, key, amount=None):
        """Whether leaving one property out loses a trait or resource."""
        for _key, _src, without in self.each():
            if without is None:
                continue
            if amount is None and key not in without.traits:
                return True
            if amount is not None and without.resources.get(key, 0) < amount:
                return True
        return False

    def sources(self, traits, resources):
        """Which single property each requirement disappears without.

        :returns: ``{(trait, scope, forbidden) or resource class: sources}``
        """
        found = collections.defaultdict(list)
        for _key, source, without in self.each():
            if without is None:
                # NOTE(founders): nova refuses the image without this
                # property (memory encryption without UEFI firmware, say):
                # it says nothing about where a requirement comes from.
                continue
            for wanted in traits:
                if wanted not in without.traits:
                    found[wanted].append(source)
            for rc, amount in resources.items():
                if without.resources.get(rc, 0) < amount:
                    found[rc].append(source)
        return {k: tuple(v) for k, v in found.items()}
