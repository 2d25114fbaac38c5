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
"""Building placement requests: query parameters, URLs, answers' types.

Pure helpers, with no client and no I/O.
"""

import urllib.parse

from nova_image_traits import exception
from nova_image_traits import requirements as reqs


def parse_version(text):
    """Return a microversion string such as '1.31' as a tuple (1, 31)."""
    major, _sep, minor = str(text).partition('.')
    return int(major), int(minor)


def format_version(version):
    """Return a microversion tuple such as (1, 31) as a string '1.31'."""
    return '%d.%d' % tuple(version)


def candidate_params(query, root=None, limit=None, image_traits=(),
                     requirements=()):
    """Return ``GET /allocation_candidates`` parameters for a boot query.

    Groups without resources are left out, as placement requires, unless
    they are numbered and named in ``same_subtree`` (microversion 1.36).
    Required traits are listed, forbidden ones prefixed with ``!``.

    :param query: a :class:`~nova_image_traits.flavor.ResourceQuery`
    :param root: restrict every group to this provider's tree
    :param limit: the number of candidates wanted, or None for all
    :param image_traits: traits to require in the unsuffixed group, where
        nova puts the image's
    :param requirements: more
        :class:`~nova_image_traits.requirements.Requirement` objects, each
        added where nova puts it (the unsuffixed group or the root)
    :returns: a list of (name, value) pairs
    """
    asked = {(r.scope, r.forbidden): set() for r in requirements}
    for r in requirements:
        asked[r.scope, r.forbidden].add(r.trait)
    params = []
    numbered = set()
    subtree = {sfx for suffixes in query.same_subtree for sfx in suffixes}
    for group in query.groups:
        sfx = group.suffix
        if not group.resources and not (sfx and sfx in subtree):
            continue
        if sfx:
            numbered.add(sfx)
        if group.resources:
            params.append(('resources' + sfx, ','.join(
                '%s:%d' % item for item in sorted(group.resources.items()))))
        required = set(group.required)
        forbidden = set(group.forbidden)
        if not sfx:
            required |= set(image_traits)
            required |= asked.get((reqs.UNSUFFIXED, False), set())
            forbidden |= asked.get((reqs.UNSUFFIXED, True), set())
        traits = sorted(required) + ['!' + t for t in sorted(forbidden)]
        if traits:
            params.append(('required' + sfx, ','.join(traits)))
        params.extend(('member_of' + sfx, m) for m in group.member_of)
        if root:
            params.append(('in_tree' + sfx, root))
    if len(numbered) > 1:
        params.append(('group_policy', query.group_policy or 'none'))
    roots = sorted(set(query.root_required) |
                   asked.get((reqs.ROOT, False), set())) + [
        '!' + t for t in sorted(set(query.root_forbidden) |
                                asked.get((reqs.ROOT, True), set()))]
    if roots:
        params.append(('root_required', ','.join(roots)))
    for suffixes in query.same_subtree:
        if set(suffixes) <= numbered:
            params.append(('same_subtree', ','.join(sorted(suffixes))))
    if limit is not None:
        params.append(('limit', str(limit)))
    return params


def candidate_version(params):
    """The lowest microversion that accepts these candidate parameters.

    From placement's ``schemas/allocation_candidate.py``: ``in_tree``
    needs 1.31, a suffix other than digits 1.33, ``root_required`` 1.35,
    and ``same_subtree`` or a group with traits but no resources 1.36.

    :param params: (name, value) pairs from :func:`candidate_params`
    :returns: a string such as '1.31'
    """
    names = {name for name, _value in params}
    need = (1, 31)
    if 'root_required' in names:
        need = (1, 35)
    if 'same_subtree' in names:
        need = (1, 36)
    for name in names:
        for param in ('resources', 'required', 'member_of', 'in_tree'):
            if not name.startswith(param):
                continue
            suffix = name[len(param):]
            if suffix and not suffix.isdigit():
                need = max(need, (1, 33))
            if (param == 'required' and suffix and
                    'resources' + suffix not in names):
                need = max(need, (1, 36))
            break
    return format_version(need)


def urlencode(params):
    """URL-encode (name, value) pairs, keeping placement's separators."""
    return urllib.parse.urlencode(params, safe=',:!')


def require(value, kind, url, what):
    """Check a response field's type, else raise a malformed-body error."""
    if not isinstance(value, kind):
        raise exception.PlacementMalformedResponse(
            url=url, why='%s is not a %s' % (what, kind.__name__))
    return value


def quote(value):
    """Quote one path segment (a UUID we were given, never trusted)."""
    return urllib.parse.quote(str(value), safe='')
