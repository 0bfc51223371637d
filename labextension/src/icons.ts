import { LabIcon } from '@jupyterlab/ui-components';

/**
 * A chat bubble holding a percent sign: the icon of message files (`.msg.md`).
 */
const AGENT_CHAT_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon-warn0 jp-icon-selectable" fill="#EF6C00">
    <path d="M4 3h16a2 2 0 0 1 2 2v11a2 2 0 0 1-2 2h-9.5L5 22v-4H4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2z"/>
  </g>
  <g class="jp-icon-selectable-inverse" fill="#fff">
    <circle cx="8.3" cy="7.6" r="1.7"/>
    <circle cx="15.7" cy="13.4" r="1.7"/>
    <path d="M15.3 5.6l1.3 1-8 9.8-1.3-1z"/>
  </g>
</svg>`;

export const agentChatIcon = new LabIcon({
  name: 'jupyter-percent-agent:agent-chat',
  svgstr: AGENT_CHAT_SVG
});
