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
    """Refuse traits the server was not already validated for.

    The rebuild is accepted only when every trait the new image requires was
    already required, when the server was created, by its current image or
    by its flavor: placement checked those at boot. No placement request is
    made.

    The scheduler filter cannot see the current image (nova has replaced it
    with the new one by then), so there only the flavor's required traits
    count, which makes the filter stricter than the conductor hook.
    """

    name = 'reject'
    rule = 'only traits the current image or the flavor required are accepted'
    lacks = _('not required when this server was created')

    def evaluate(self, ctx):
        request = ctx.request
        validated = set(request.flavor.required_traits)
        known = request.original_image_properties is not None
        if known:
            validated |= nit_traits.image_traits(
                request.original_image_properties).required
        missing = ctx.required - validated
        if not missing:
            return decision.Verdict(
                decision.ACCEPT,
                detail='all required traits were validated at boot')
        return decision.Verdict(
            decision.REJECT, missing=frozenset(missing),
            detail=('traits not required by the %s' % (
                'current image or the flavor' if known else
                'flavor (the current image is not known here)')))
