/* The document page: bring the cited span into view (a file, not inline: the CSP allows none). */
const cited = document.getElementById("cited");
if (cited) cited.scrollIntoView({block: "center"});
