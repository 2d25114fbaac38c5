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
"""How a reason's list of names fits nova's column.

:mod:`nova_image_traits.reasons` words every decision; this module only
fits the lists its sentences hold to the 200 bytes nova keeps of a
refusal, and cuts what does not fit.
"""

from nova_image_traits.i18n import _

#: Nova stores a refusal in 255 bytes of UTF-8 (instance faults and action
#: event details, ``nova.compute.utils.exception_to_dict``), after
#: ``NoValidHost``'s own "No valid host was found. ", which is 25 bytes in
#: English and may be longer translated: the reason gets 200 bytes.
MAX_REASON = 200


def fits(text):
    """Whether ``text`` fits in :data:`MAX_REASON` bytes of UTF-8."""
    return len(text.encode('utf-8')) <= MAX_REASON


def _cut(text, limit):
    """``text`` cut to at most ``limit`` bytes of UTF-8, whole characters."""
    return text.encode('utf-8')[:limit].decode('utf-8', 'ignore')


def cut(text):
    """``text``, or its start ending in "...", within :data:`MAX_REASON`."""
    if fits(text):
        return text
    return _cut(text, MAX_REASON - 3) + '...'


def fitted(items, sep, what, advice):
    """``<items>: <what>. <advice>``, that :func:`fits`.

    When everything does not fit, the advice is dropped first, then the
    items that do not fit are counted ("and 3 more"); the decision's log
    line names them all.
    """
    names = list(items)
    for shown in range(len(names), 0, -1):
        listed = sep.join(names[:shown])
        if shown < len(names):
            listed = _('%(listed)s and %(count)d more') % {
                'listed': listed, 'count': len(names) - shown}
        text = _('%(traits)s: %(what)s.') % {'traits': listed, 'what': what}
        for reason in ('%s %s' % (text, advice), text):
            if fits(reason):
                return reason
    # NOTE(founders): the first name alone is too long for the column: its
    # start.
    more = ''
    if len(names) > 1:
        more = _(' and %d more') % (len(names) - 1)
    room = MAX_REASON - len((_('%(traits)s: %(what)s.') % {
        'traits': more, 'what': what}).encode('utf-8')) - 3
    listed = _cut(names[0], max(room, 16)) + '...' + more
    text = _('%(traits)s: %(what)s.') % {'traits': listed, 'what': what}
    return _cut(text, MAX_REASON)
