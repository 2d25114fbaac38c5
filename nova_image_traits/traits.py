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
"""Extract and validate the traits an image or a flavor asks for.

Images follow nova's rule exactly (``nova.objects.ImageMetaProps``): a
property ``trait:<NAME>`` whose value is the string ``required`` requires
the trait; any other value is ignored, as nova ignores it. Unlike nova, the
names' syntax is checked here before anything reaches placement.
"""

import re
import typing as ty

import os_traits

#: Image and flavor properties that name a trait start with this.
TRAIT_PREFIX = 'trait:'
REQUIRED = 'required'
FORBIDDEN = 'forbidden'
#: Placement's column size for trait names.
MAX_TRAIT_LENGTH = 255
#: The longest property name quoted back in a reason or a log line.
_QUOTE_LIMIT = 80

# NOTE(founders): placement's own rule for trait names (CUSTOM_TRAIT_PATTERN in
# placement/schemas/trait.py, applied to every name). os_traits'
# normalize_name() folds runs of underscores, so it cannot be used to validate
# names placement accepts.
_TRAIT_NAME = re.compile(r'[A-Z0-9_]+')


class ImageTraits(ty.NamedTuple):
    """What an image asks for.

    :ivar required: frozenset of valid trait names the image requires
    :ivar invalid: tuple of (property, why) for malformed or unknown names
    :ivar ignored: tuple of trait properties whose value is not ``required``
    """
    required: frozenset
    invalid: tuple
    ignored: tuple


def quote(text):
    """Return a safe, bounded rendering of user-supplied text.

    Image properties come from any user who can upload an image. They are
    quoted with :func:`repr` (so newlines and control characters cannot
    forge log lines) and cut to a readable length.

    :param text: any string
    """
    shown = repr(str(text))
    if len(shown) > _QUOTE_LIMIT:
        shown = shown[:_QUOTE_LIMIT - 4] + '...' + shown[-1]
    return shown


def check_trait_name(name):
    """Return why ``name`` cannot be a trait placement knows, or None.

    Only the syntax and the length are checked, as placement's API schema
    does: upper case letters, digits and underscores, and for custom traits
    the ``CUSTOM_`` prefix followed by at least one of those. Whether a
    standard trait exists is placement's to say, not the local os-traits':
    the placement a cloud runs may ship a newer one. A trait placement
    does not know is on no provider, so it counts as missing.

    :param name: the candidate trait name
    """
    if not isinstance(name, str) or not name:
        return 'the trait name is empty'
    if len(name) > MAX_TRAIT_LENGTH:
        return 'the trait name is longer than %d characters' % (
            MAX_TRAIT_LENGTH)
    if _TRAIT_NAME.fullmatch(name):
        if name == os_traits.CUSTOM_NAMESPACE:
            return 'CUSTOM_ must be followed by a name'
        return None
    if _TRAIT_NAME.fullmatch(name.upper()):
        return 'trait names are upper case; did you mean %s?' % name.upper()
    return ('trait names are upper case letters, digits and underscores, '
            'custom ones starting with CUSTOM_')


def _flatten_properties(image):
    """Return the image's properties as one flat mapping.

    Accepts a Glance v2 image (custom properties at the top level) or a dict
    with a ``properties`` sub-dict (nova's image dict). Nova's ``ImageMeta``
    is translated by :mod:`nova_image_traits.nova_request`.
    """
    if not image:
        return {}
    flat = dict(image)
    nested = flat.pop('properties', None)
    if isinstance(nested, dict):
        flat.update(nested)
    return flat


def image_traits(image):
    """Return the :class:`ImageTraits` an image asks for.

    :param image: image properties, in any form :func:`_flatten_properties`
        accepts
    """
    required = set()
    invalid = []
    ignored = []
    for key, value in _flatten_properties(image).items():
        key = str(key)
        if not key.startswith(TRAIT_PREFIX):
            continue
        if str(value) != REQUIRED:
            ignored.append(key)
            continue
        name = key[len(TRAIT_PREFIX):]
        why = check_trait_name(name)
        if why:
            invalid.append((key, why))
        else:
            required.add(name)
    return ImageTraits(frozenset(required), tuple(sorted(invalid)),
                       tuple(sorted(ignored)))
