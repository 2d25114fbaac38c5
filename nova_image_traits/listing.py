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
"""How a reason lists traits and requirements, within nova's column.

:mod:`nova_image_traits.reasons` words every decision; the lists of
names it gives the user are built here, fitted to the 200 bytes nova
keeps of a refusal.
"""

from nova_image_traits.i18n import _
from nova_image_traits import traits as nit_traits

#: Nova stores a refusal in 255 bytes of UTF-8 (instance faults and action
#: event details, ``nova.compute.utils.exception_to_dict``), after
#: ``NoValidHost``'s own "No valid host was found. ", which is 25 bytes in
#: English and may be longer translated: the reason gets 200 bytes.
MAX_REASON = 200
_FIX = _('Fix or remove the image property, then rebuild again.')
_FIX_MANY = _('Fix or remove the image property, or properties, then '
              'rebuild again.')


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


def trait_reason(traits, what, advice=None):
    """Return a user reason naming ``traits`` first, that fits.

    Nova keeps only 255 characters of a refusal, so the traits come first,
    then ``what`` is wrong with them, then the advice. When everything does
    not fit, the advice is dropped first, then the traits that do not fit
    are counted ("and 3 more"); the decision's log line names them all.

    :param traits: the trait names
    :param what: what is wrong with them, e.g. "missing on this server's
        compute node"
    :param advice: what the user can do; the default says to use another
        image or create a new server
    """
    return fitted(sorted(traits), ', ', what, _advice(advice))


def _advice(advice):
    if advice is None:
        return _('Rebuild with another image, or create a new server with '
                 'this one.')
    return advice


def _clause(requirement):
    """"hw_tpm_version=2.0 needs COMPUTE_SECURITY_TPM_2_0", for users."""
    values = {'cause': requirement.cause(), 'trait': requirement.trait}
    if not requirement.derived:
        return _('the new image requires %(trait)s') % values
    if requirement.forbidden:
        return _('%(cause)s forbids %(trait)s') % values
    return _('%(cause)s needs %(trait)s') % values


def requirement_reason(unmet, what, advice=None):
    """A user reason naming each unmet requirement by what caused it.

    "hw_tpm_version=2.0 needs COMPUTE_SECURITY_TPM_2_0: missing on this
    server's compute node." It fits, as :func:`trait_reason`.

    :param unmet: :class:`~nova_image_traits.requirements.Requirement`
        objects
    :param what: what the strategy found of them
    """
    return fitted([_clause(r) for r in sorted(unmet)], '; ', what,
                  _advice(advice))


def resource_reason(needs, what=None):
    """The refusal of an image that needs resources the server lacks.

    :param needs: :class:`~nova_image_traits.requirements.ResourceNeed`
        objects
    :param what: what is wrong; by default that the server does not hold
        them
    """
    return fitted(
        [_('%(cause)s needs %(rc)s') % {'cause': n.cause(),
                                        'rc': n.resource_class}
         for n in needs], '; ',
        what or _('this server does not hold it, and a rebuild keeps the '
                  'resources it holds'),
        _('Create a new server with this image instead.'))


def missing_message(missing, lacks):
    """User-facing text for traits the strategy found missing.

    :param missing: the trait names
    :param lacks: what the strategy judged, as the strategy's ``lacks``
        phrase ("missing on the resources this server uses")
    """
    return trait_reason(missing, _('required by the new image, %s') % lacks)


def invalid_reason(invalid):
    """The refusal naming the invalid properties, fit for nova's column.

    :param invalid: ``(property, why)`` pairs
    """
    names = [nit_traits.quote(prop) for prop, _why in invalid]
    if len(names) == 1:
        message = _('Image property %(property)s does not name a valid '
                    'trait: %(why)s. %(fix)s') % {
                        'property': names[0], 'why': invalid[0][1],
                        'fix': _FIX}
        if fits(message):
            return message
        return _('Image property %(property)s does not name a valid '
                 'trait. %(fix)s') % {'property': names[0], 'fix': _FIX}
    template = _('Image properties %(listed)s do not name valid traits. '
                 '%(fix)s')
    more = _('%(shown)s and %(count)d more')
    fixed = len((template % {'listed': more % {'shown': '', 'count': 999},
                             'fix': _FIX_MANY}).encode('utf-8'))
    shown = [names[0]]
    for name in names[1:]:
        if fixed + len(', '.join(shown + [name]).encode('utf-8')) > (
                MAX_REASON):
            break
        shown.append(name)
    if len(shown) < len(names):
        listed = more % {'shown': ', '.join(shown),
                         'count': len(names) - len(shown)}
    else:
        listed = _('%(names)s and %(last)s') % {
            'names': ', '.join(shown[:-1]), 'last': shown[-1]}
    return template % {'listed': listed, 'fix': _FIX_MANY}
