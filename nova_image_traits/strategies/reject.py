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

from nova_image_traits import decision
from nova_image_traits.i18n import _
from nova_image_traits.strategies import base
from nova_image_traits import traits as nit_traits


class RejectStrategy(base.Strategy):
    """Refuse what the server was not already validated for.

    The rebuild is accepted only when every requirement of the new image
    was already asked, when the server was created, by its current image
    or by its flavor: placement checked those at boot. A trait the image
    requires counts as validated when the current image or the flavor
    required it; a requirement nova derives, when a boot of the current
    image asked the same of the same scope, or the flavor required (or
    forbade) the same trait. No placement request is made.

    The scheduler filter cannot see the current image (nova has replaced it
    with the new one by then), so there only the flavor counts, which makes
    the filter stricter than the conductor hook.
    """

    name = 'reject'
    rule = 'only traits the current image or the flavor required are accepted'
    lacks = _('not required when this server was created')

    def unmet_phrase(self, unmet):
        return _('not asked when this server was created')

    def evaluate(self, ctx):
        request = ctx.request
        flavor = request.flavor
        validated = set(flavor.required_traits)
        known = request.original_image_properties is not None
        if known:
            validated |= nit_traits.image_traits(
                request.original_image_properties).required
        before = request.original_derived or frozenset()
        unmet = []
        for r in ctx.requirements:
            if not r.derived:
                ok = r.trait in validated or r in before
            else:
                ok = r in before or r.trait in (
                    flavor.forbidden_traits if r.forbidden else
                    flavor.required_traits)
            if not ok:
                unmet.append(r)
        if not unmet:
            return decision.Verdict(
                decision.ACCEPT,
                detail='all requirements were validated at boot')
        return base.judged(unmet, detail=(
            'not asked by the %s' % (
                'current image or the flavor' if known else
                'flavor (the current image is not known here)')))
